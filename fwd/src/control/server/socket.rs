//! The control socket on disk, and who may use it.
//!
//! - The socket's directory must be owned by root (or the daemon's user)
//!   and writable by nobody else: in a directory others can write, another
//!   user could put a socket, a link or a file at the path before the
//!   daemon starts (or a link at the path `chmod` then follows).
//! - Only a stale *socket* at the path is replaced (one nobody listens on,
//!   left by a daemon that did not exit cleanly). A live socket, a symbolic
//!   link (dangling or not), a regular file or anything else is refused
//!   with an error that says what is there; nothing is deleted.
//! - A peer may connect when it is root, the daemon's own user, or in the
//!   socket's group: as its primary group or a supplementary one
//!   (`SO_PEERGROUPS`, the groups it had when it connected).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// Who is on the other end of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// Who may talk to the daemon.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub own_uid: u32,
    pub gid: Option<u32>,
}

impl Policy {
    pub fn allows(&self, p: &Peer) -> bool {
        p.uid == 0
            || p.uid == self.own_uid
            || self
                .gid
                .is_some_and(|g| p.gid == g || p.groups.contains(&g))
    }

    /// Root and the daemon's own user: they may write files anywhere and
    /// use the last client slot.
    pub fn is_admin(&self, p: &Peer) -> bool {
        p.uid == 0 || p.uid == self.own_uid
    }
}

/// The credentials of the peer of `s`: `SO_PEERCRED` and `SO_PEERGROUPS`.
///
/// # Errors
/// The OS error of either query.
pub fn peer(s: &UnixStream) -> io::Result<Peer> {
    let cred = nix::sys::socket::getsockopt(s, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(io::Error::from)?;
    Ok(Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        groups: peer_groups(s)?,
    })
}

fn peer_groups(s: &UnixStream) -> io::Result<Vec<u32>> {
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut len = (groups.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
        // SAFETY: the buffer is valid for `len` bytes and outlives the call;
        // the kernel writes at most `len` bytes and updates `len`.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let n = len as usize / std::mem::size_of::<libc::gid_t>();
        if rc == 0 {
            groups.truncate(n);
            return Ok(groups);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ERANGE) && n > groups.len() && n <= 1 << 16 {
            groups.resize(n, 0);
            continue;
        }
        return Err(e);
    }
}

/// Checks that `dir` may hold the daemon's files (the socket, saved
/// state): owned by root or `own_uid`, writable by no one else. Creates it
/// with `mode` when missing.
///
/// # Errors
/// What is wrong with the directory.
pub fn check_dir(dir: &Path, own_uid: u32, mode: u32) -> io::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(dir)?;
    }
    let m = std::fs::metadata(dir)?;
    if !m.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a directory", dir.display()),
        ));
    }
    if m.uid() != 0 && m.uid() != own_uid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {}: the daemon's directories must be owned by root",
                dir.display(),
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is writable by others (mode {:04o}): another user could plant a file \
                 or link where the daemon writes; use a directory like /run/fwd",
                dir.display(),
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Makes the path free for a new socket: nothing there, or a stale socket
/// (removed).
///
/// # Errors
/// A live daemon on it, or anything at the path that is not a socket.
pub fn clear_stale(path: &Path) -> io::Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let ft = m.file_type();
    if ft.is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} is a symbolic link (to {}); the daemon neither follows nor removes it",
                path.display(),
                std::fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string())
            ),
        ));
    }
    if !ft.is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists and is not a socket; the daemon does not remove it",
                path.display()
            ),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{} is in use by a running daemon", path.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            // Stale: left by a daemon that did not exit cleanly.
            std::fs::remove_file(path)
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("{}: cannot tell whether it is stale: {e}", path.display()),
        )),
    }
}

/// Creates the listening socket at `path` with `mode` and group `gid`.
///
/// # Errors
/// See [`check_dir`] and [`clear_stale`], or the OS error of binding.
pub fn bind(path: &Path, mode: u32, gid: Option<u32>, own_uid: u32) -> io::Result<UnixListener> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the socket path is empty",
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_dir(dir, own_uid, 0o755)?;
    clear_stale(path)?;
    let listener = UnixListener::bind(path)?;
    // The directory is ours alone (checked above), so nothing can swap the
    // socket for a link between the bind and these two calls.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    if let Some(g) = gid {
        std::os::unix::fs::chown(path, None, Some(g))?;
    }
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("fwd-sock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o755).create(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn me() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    #[test]
    fn a_regular_file_at_the_path_is_kept_and_refused() {
        let d = scratch("file");
        let p = d.join("fwd.sock");
        std::fs::write(&p, "precious").unwrap();
        let e = bind(&p, 0o660, None, me()).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "precious");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dangling_link_is_named_as_a_link_not_an_address_in_use() {
        let d = scratch("link");
        let p = d.join("fwd.sock");
        std::os::unix::fs::symlink(d.join("nowhere"), &p).unwrap();
        let e = bind(&p, 0o660, None, me()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&p).is_ok(), "the link is kept");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_a_stale_socket_is_replaced_and_a_live_one_is_refused() {
        let d = scratch("stale");
        let p = d.join("fwd.sock");
        let live = bind(&p, 0o660, None, me()).unwrap();
        let e = bind(&p, 0o660, None, me()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
        drop(live); // the file stays: a stale socket
        assert!(p.exists());
        let again = bind(&p, 0o600, None, me()).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(again);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let d = scratch("insecure");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = bind(&d.join("fwd.sock"), 0o660, None, me()).unwrap_err();
        assert!(e.to_string().contains("writable by others"), "{e}");
        assert!(bind(Path::new(""), 0o660, None, me()).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn supplementary_groups_count_and_others_do_not() {
        let policy = Policy {
            own_uid: 0,
            gid: Some(1234),
        };
        let peer = |uid, gid, groups: &[u32]| Peer {
            uid,
            gid,
            groups: groups.to_vec(),
        };
        assert!(policy.allows(&peer(1000, 1000, &[27, 1234])));
        assert!(policy.allows(&peer(1000, 1234, &[])));
        assert!(!policy.allows(&peer(1000, 1000, &[27])));
        assert!(policy.allows(&peer(0, 0, &[])));
        let none = Policy {
            own_uid: 0,
            gid: None,
        };
        assert!(!none.allows(&peer(1000, 1234, &[1234])));
    }

    #[test]
    fn the_peer_groups_of_a_real_connection_are_this_process_groups() {
        let (a, _b) = UnixStream::pair().unwrap();
        let p = peer(&a).unwrap();
        assert_eq!(p.uid, me());
        let mut mine: Vec<u32> = nix::unistd::getgroups()
            .unwrap()
            .into_iter()
            .map(|g| g.as_raw())
            .collect();
        let mut got = p.groups.clone();
        mine.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, mine);
    }
}
