//! `config save`: where the running state may be written, and writing it
//! so that no one else's file is ever touched.
//!
//! - A bare file name goes into `control.save_dir`. Any peer may save there,
//!   under at most `control.max_saved_files` names unless it is an admin:
//!   a full view saves ~40 MB, and a peer saving under name after name
//!   would otherwise fill the disk that `/var` holds.
//! - An absolute path elsewhere is for root and the daemon's own user only:
//!   a member of the socket group must not make the root daemon write a
//!   file it could not write itself.
//! - The text goes to a fresh temporary file in the target's directory,
//!   created with `O_CREAT | O_EXCL | O_NOFOLLOW` under an unpredictable
//!   name, is synced, and is renamed over the target (a rename replaces a
//!   link at the target, it never writes through one); then the directory
//!   is synced.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use ctl::wire::{self, ErrorBody, ErrorKind, Response};

use super::ServerContext;

/// Where `config save NAME` writes for `admin` (root, the daemon's user) or
/// another peer.
///
/// # Errors
/// `Invalid` for a malformed path, `PermissionDenied` for a non-admin peer
/// naming a path outside `save_dir`.
pub fn target(save_dir: &Path, name: &str, admin: bool) -> Result<PathBuf, ErrorBody> {
    let p = Path::new(name);
    let invalid = |m: String| Err(ErrorBody::new(ErrorKind::Invalid, m));
    if name.is_empty() || name.contains('\0') || name.ends_with('/') {
        return invalid(format!("{name:?} is not a file name"));
    }
    if p.components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return invalid(format!("{name:?}: no . or .. components"));
    }
    let file = match p.file_name().and_then(|f| f.to_str()) {
        Some(f) if !f.starts_with('.') => f,
        _ => {
            return invalid(format!(
                "{name:?} does not end in a file name (not a hidden one)"
            ))
        }
    };
    if !p.is_absolute() {
        if p.components().count() != 1 {
            return invalid(format!(
                "{name:?}: give a file name (saved in {}) or an absolute path",
                save_dir.display()
            ));
        }
        return Ok(save_dir.join(file));
    }
    if p.parent() == Some(save_dir) || admin {
        return Ok(p.to_path_buf());
    }
    Err(ErrorBody::new(
        ErrorKind::PermissionDenied,
        format!(
            "only root may save outside {}; give a file name to save there",
            save_dir.display()
        ),
    ))
}

/// Writes `text` to `path` through a fresh temporary file (module doc).
///
/// # Errors
/// The OS error; the target is then untouched and no temporary file is left.
pub fn write_atomically(path: &Path, text: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let file = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp = dir.join(format!(
        ".{}.{}.{nonce:x}.tmp",
        file.to_string_lossy(),
        std::process::id()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let written = f
        .write_all(text)
        .and_then(|()| f.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Refuses a save to `path`, a new name in `save_dir`, when `save_dir`
/// already holds `max` files (the saves' own temporary files, hidden, are
/// not counted). Overwriting a file that is there is always allowed.
///
/// # Errors
/// `TooLarge`, naming the limit.
pub fn room_for(save_dir: &Path, path: &Path, max: usize) -> Result<(), ErrorBody> {
    if path.parent() != Some(save_dir) || std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let held = std::fs::read_dir(save_dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count()
    });
    if held >= max {
        return Err(ErrorBody::new(
            ErrorKind::TooLarge,
            format!(
                "{} holds {held} saved files (control.max_saved_files {max}): \
                 save under one of their names, or have root remove some",
                save_dir.display()
            ),
        ));
    }
    Ok(())
}

/// `config save NAME` by a peer that is `admin` or not.
pub fn config_save(
    ctx: &ServerContext,
    cfg: &super::ServerConfig,
    own_uid: u32,
    name: &str,
    admin: bool,
) -> Result<Response, ErrorBody> {
    let save_dir = cfg.save_dir.as_path();
    let path = target(save_dir, name, admin)?;
    if !admin {
        room_for(save_dir, &path, cfg.max_saved_files)?;
    }
    let (generation, t) = ctx.control.snapshot()?;
    let (text, lines) = super::super::saved::running_text(&t, generation);
    if path.parent() == Some(save_dir) {
        // Created on first use; refused when others could plant links in it.
        super::socket::check_dir(save_dir, own_uid, 0o750)
            .map_err(|e| ErrorBody::new(ErrorKind::Internal, e.to_string()))?;
    }
    write_atomically(&path, text.as_bytes(), 0o640).map_err(|e| {
        ErrorBody::new(
            ErrorKind::Invalid,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    Ok(Response::Saved(wire::Saved {
        path: path.display().to_string(),
        generation,
        lines: lines as u64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::DirBuilderExt as _;

    #[test]
    fn peers_save_into_the_save_dir_and_only_admins_elsewhere() {
        let dir = Path::new("/var/lib/fwd");
        assert_eq!(
            target(dir, "running.conf", false).unwrap(),
            dir.join("running.conf")
        );
        assert_eq!(target(dir, "/var/lib/fwd/x", false).unwrap(), dir.join("x"));
        let e = target(dir, "/etc/shadow", false).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
        assert_eq!(
            target(dir, "/etc/fwd/running", true).unwrap(),
            Path::new("/etc/fwd/running")
        );
        for bad in [
            "",
            "../x",
            "a/b",
            "/var/lib/fwd/../../etc/passwd",
            ".hidden",
            "/var/lib/fwd/",
            "./x",
        ] {
            let e = target(dir, bad, true).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid, "{bad:?}: {e}");
        }
    }

    #[test]
    fn new_names_past_the_saved_file_limit_are_refused_but_overwrites_go() {
        let d = scratch("room");
        for n in ["a", "b", "c"] {
            std::fs::write(d.join(n), "saved\n").unwrap();
        }
        // A save's temporary file (hidden) is not a saved file.
        std::fs::write(d.join(".d.1.2.tmp"), "").unwrap();
        room_for(&d, &d.join("d"), 4).unwrap();
        let e = room_for(&d, &d.join("d"), 3).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TooLarge, "{e}");
        assert!(e.message.contains("control.max_saved_files 3"), "{e}");
        room_for(&d, &d.join("b"), 3).unwrap();
        room_for(&d, &d.join("b"), 1).unwrap();
        // Elsewhere (an admin's absolute path) it does not count.
        room_for(&d, Path::new("/etc/fwd/x"), 1).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fwd-save-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_link_at_the_old_temp_name_or_the_target_is_never_written_through() {
        let d = scratch("links");
        let victim = d.join("victim");
        std::fs::write(&victim, "root's file").unwrap();
        // The old save wrote `<path>.tmp` and followed links there.
        std::os::unix::fs::symlink(&victim, d.join("x.tmp")).unwrap();
        write_atomically(&d.join("x"), b"saved\n", 0o640).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file");
        assert_eq!(std::fs::read_to_string(d.join("x")).unwrap(), "saved\n");
        // A link at the target itself is replaced, not followed.
        std::os::unix::fs::symlink(&victim, d.join("y")).unwrap();
        write_atomically(&d.join("y"), b"saved\n", 0o640).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file");
        assert!(!std::fs::symlink_metadata(d.join("y"))
            .unwrap()
            .file_type()
            .is_symlink());
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp") && n != "x.tmp")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temp_file() {
        let d = scratch("fail");
        // The target is a directory: the rename fails.
        std::fs::create_dir(d.join("t")).unwrap();
        std::fs::write(d.join("t").join("keep"), "x").unwrap();
        assert!(write_atomically(&d.join("t"), b"saved\n", 0o640).is_err());
        assert!(d.join("t").join("keep").exists());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
