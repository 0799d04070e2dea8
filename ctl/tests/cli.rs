//! The real `fwdctl` binary against a fake daemon: what it sends, what it
//! prints, its exit status.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::FakeServer;
use ctl::wire::*;

fn fwdctl(socket: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fwdctl"))
        .arg("-s")
        .arg(socket)
        .args(args)
        .env_remove("FWD_SOCKET")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The requests (not the hello) the fake received, decoded.
fn requests(server: &FakeServer) -> Vec<RequestLine> {
    server
        .lines()
        .iter()
        .filter(|l| !l.starts_with("{\"hello\""))
        .map(|l| ctl::decode(l.as_bytes()).unwrap())
        .collect()
}

fn write_file(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    p
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ctl-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn batch_with_a_bad_last_line_sends_nothing() {
    let server = FakeServer::start();
    let dir = scratch("badlast");
    let mut body = String::from("# routes\n\n");
    for i in 0..500 {
        body.push_str(&format!(
            "route add 10.{}.{}.0/24 via 10.0.1.2 dev p1\n",
            i / 256,
            i % 256
        ));
    }
    body.push_str("route add 10.99.0.0/16 via 10.0.1.2 dev p1 metric 5\n");
    let file = write_file(&dir, "routes.batch", &body);
    let out = fwdctl(&server.path, &["-b", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("line 503:"), "{err}");
    assert!(err.contains("'metric'"), "{err}");
    assert_eq!(server.connections(), 0, "a bad batch must not even connect");
    assert!(server.lines().is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn batch_is_one_request_and_daemon_errors_name_the_file_line() {
    let server = FakeServer::start();
    let dir = scratch("batch");
    let good = write_file(
        &dir,
        "good.batch",
        "rule flush\n# comment\nrule add prio 1 dport 22 proto tcp action drop\n\nroute add 10.0.0.0/8 via 10.0.1.2 dev p1\n",
    );
    let out = fwdctl(&server.path, &["-b", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("applied 3 changes in generation 7"),
        "{}",
        text(&out.stdout)
    );
    let reqs = requests(&server);
    assert_eq!(reqs.len(), 1);
    match &reqs[0].request {
        Request::Batch { changes } => {
            assert_eq!(changes.len(), 3);
            assert_eq!(changes[0], Change::RuleFlush {});
        }
        other => panic!("{other:?}"),
    }

    // The daemon refuses change 2, which is on file line 4.
    let bad = write_file(
        &dir,
        "bad.batch",
        "route add 10.0.0.0/8 via 10.0.1.2 dev p1\n\n# next one uses an unknown port\nroute add 10.1.0.0/16 via 10.0.1.2 dev p9\nroute add 10.2.0.0/16 blackhole\n",
    );
    let out = fwdctl(&server.path, &["-b", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("line 4: invalid: unknown port 'p9'"), "{err}");
    assert!(
        err.contains("route add 10.1.0.0/16 via 10.0.1.2 dev p9"),
        "{err}"
    );
    assert!(err.contains("nothing was applied"), "{err}");

    // From stdin, with --json.
    let mut child = Command::new(env!("CARGO_BIN_EXE_fwdctl"))
        .args(["--json", "-s"])
        .arg(&server.path)
        .args(["-b", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"neigh add 10.0.1.2 lladdr 02:00:00:00:01:02 dev p1\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"done\":{\"generation\":7,\"changes\":1}}\n"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn changes_send_the_expected_requests() {
    let server = FakeServer::start();
    let cases = [
        (
            vec![
                "route",
                "add",
                "10.0.0.0/8",
                "via",
                "10.0.1.2",
                "dev",
                "p1",
                "table",
                "5",
            ],
            r#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.0/8","table":5,"target":{"gateway":{"via":"10.0.1.2","dev":"p1"}}}}}}"#,
        ),
        (
            vec!["route", "add", "192.0.2.0/24", "blackhole"],
            r#"{"id":1,"request":{"change":{"route_add":{"prefix":"192.0.2.0/24","target":"blackhole"}}}}"#,
        ),
        (
            vec![
                "neigh",
                "add",
                "10.0.1.2",
                "lladdr",
                "02:00:00:00:01:02",
                "dev",
                "p1",
            ],
            r#"{"id":1,"request":{"change":{"neigh_add":{"addr":"10.0.1.2","lladdr":"02:00:00:00:01:02","dev":"p1"}}}}"#,
        ),
    ];
    for (args, want) in &cases {
        let out = fwdctl(&server.path, args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "", "changes are silent");
        assert_eq!(server.lines().last().unwrap(), want);
    }
    // A rule without an id: the daemon's choice is printed.
    let out = fwdctl(
        &server.path,
        &[
            "rule",
            "add",
            "prio",
            "10",
            "src",
            "10.0.0.0/8",
            "dport",
            "80-90",
            "proto",
            "tcp",
            "action",
            "drop",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "rule 100\n");
    assert_eq!(
        server.lines().last().unwrap(),
        r#"{"id":1,"request":{"change":{"rule_add":{"priority":10,"match":{"src":"10.0.0.0/8","proto":{"value":6,"mask":255},"dport":{"lo":80,"hi":90}},"actions":["drop"]}}}}"#
    );
}

#[test]
fn daemon_errors_exit_1_and_usage_errors_exit_2() {
    let server = FakeServer::start();
    let out = fwdctl(&server.path, &["route", "add", "10.9.0.0/16", "blackhole"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "fwdctl: route add: exists: route 10.9.0.0/16 table 0 exists\n"
    );
    let out = fwdctl(&server.path, &["--json", "route", "get", "10.9.9.9"]);
    assert_eq!(out.status.code(), Some(1));
    let first = text(&out.stderr).lines().next().unwrap().to_string();
    assert_eq!(
        first,
        r#"{"error":{"kind":"not_found","message":"no route to 10.9.9.9"}}"#
    );

    let before = server.connections();
    for args in [
        vec!["route", "add", "10.0.0.1/8", "via", "10.0.1.2"],
        vec!["rule", "add", "prio", "1", "dprot", "80", "action", "drop"],
        vec!["bogus"],
        vec!["--bogus"],
        vec![],
    ] {
        let out = fwdctl(&server.path, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).starts_with("fwdctl: "), "{args:?}");
    }
    let out = fwdctl(
        &server.path,
        &["rule", "add", "prio", "1", "dprot", "80", "action", "drop"],
    );
    assert!(text(&out.stderr).contains("'dprot'"));
    assert_eq!(server.connections(), before, "usage errors never connect");

    // No daemon at all: exit 1 with a hint.
    let out = fwdctl(Path::new("/nonexistent/fwd.sock"), &["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is fwd running"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn dumps_print_tables_or_one_json_array() {
    let server = FakeServer::start();
    let out = fwdctl(&server.path, &["route", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "\
TABLE  PREFIX         TARGET
    0  10.0.0.0/8     via 10.0.1.2 dev p1
    0  192.0.2.0/24   blackhole
    5  2001:db8::/32  nexthop-group 10
"
    );
    let out = fwdctl(&server.path, &["route", "show", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let items: Vec<Item> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        items,
        common::routes()
            .into_iter()
            .map(Item::Route)
            .collect::<Vec<_>>()
    );
    // A stream that fails midway: what arrived is printed, then the error.
    let out = fwdctl(&server.path, &["rule", "show"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("ID  PRIO  MATCH  ACTIONS"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("internal: snapshot lost"));
}

#[test]
fn status_stats_get_watch_and_save() {
    let server = FakeServer::start();
    let out = fwdctl(&server.path, &["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("generation   42"), "{s}");
    assert!(s.contains("uptime       1h02m"), "{s}");
    assert!(s.contains("pending      3 objects, 4.0 KiB"), "{s}");
    assert!(
        s.contains("routing      2 of 1024 tables, 113.0 MiB of 2.0 GiB"),
        "{s}"
    );
    assert!(s.contains("worker-1"), "{s}");
    let out = fwdctl(&server.path, &["-j", "status"]);
    let r: Response = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r, Response::Status(common::status()));

    let out = fwdctl(&server.path, &["stats"]);
    assert_eq!(out.status.code(), Some(0));
    let s = text(&out.stdout);
    assert!(s.contains("DROP-REASON") && s.contains("no_route"), "{s}");
    assert!(s.contains("50.0"), "busy percentage: {s}");

    let out = fwdctl(&server.path, &["route", "get", "10.1.2.3"]);
    assert_eq!(out.status.code(), Some(0));
    let s = text(&out.stdout);
    assert!(
        s.starts_with("10.1.2.3 table 0: route 10.0.0.0/8 via 10.0.1.2 dev p1"),
        "{s}"
    );
    assert!(s.contains("02:00:00:00:01:02"), "{s}");

    let out = fwdctl(&server.path, &["watch", "interval", "1s", "count", "3"]);
    assert_eq!(out.status.code(), Some(0));
    let s = text(&out.stdout);
    assert_eq!(s.lines().count(), 4, "{s}");
    assert!(s.contains("1.00M"), "{s}");
    let out = fwdctl(&server.path, &["--json", "watch", "count", "2"]);
    let lines: Vec<Item> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);

    // A bare file name goes as it is (the daemon saves it in its
    // save_dir); a relative path is made absolute (ours).
    let out = fwdctl(&server.path, &["config", "save", "saved.conf"]);
    assert_eq!(out.status.code(), Some(0));
    match &requests(&server).last().unwrap().request {
        Request::ConfigSave { path } => assert_eq!(path, "saved.conf"),
        other => panic!("{other:?}"),
    }
    let out = fwdctl(&server.path, &["config", "save", "sub/saved.conf"]);
    assert_eq!(out.status.code(), Some(0));
    let cwd = std::env::current_dir().unwrap();
    let want = cwd.join("sub/saved.conf").to_string_lossy().into_owned();
    match &requests(&server).last().unwrap().request {
        Request::ConfigSave { path } => assert_eq!(path, &want),
        other => panic!("{other:?}"),
    }
    assert!(text(&out.stdout).contains("saved 3 lines of generation 7"));
}

#[test]
fn socket_from_the_environment() {
    let server = FakeServer::start();
    let out = Command::new(env!("CARGO_BIN_EXE_fwdctl"))
        .arg("status")
        .env("FWD_SOCKET", &server.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(server.connections(), 1);
}

#[test]
fn help_needs_no_daemon() {
    let out = fwdctl(Path::new("/nonexistent"), &["help", "route"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("route get ADDRESS"));
    let out = fwdctl(Path::new("/nonexistent"), &["rule", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("police rate"));
    let out = Command::new(env!("CARGO_BIN_EXE_fwdctl"))
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("Batch files"));
}

/// What bash completes after `line`, with the script `fwdctl completion
/// bash` prints.
fn bash_completes(script: &std::path::Path, line: &str) -> Vec<String> {
    let out = Command::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1"; read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=("");
               COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMP_LINE="$2"; COMP_POINT=${#2};
               _fwdctl fwdctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}";
               printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("bash")
        .arg(script)
        .arg(line)
        .output()
        .expect("run bash");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn bash_completion_offers_the_objects_verbs_and_keywords_of_the_language() {
    let out = fwdctl(Path::new("/nonexistent"), &["completion", "bash"]);
    assert!(out.status.success(), "{out:?}");
    let script = std::env::temp_dir().join(format!("fwdctl-completion-{}", std::process::id()));
    std::fs::write(&script, &out.stdout).unwrap();
    let top = bash_completes(&script, "fwdctl ");
    for o in ctl::text::grammar::OBJECTS {
        assert!(top.iter().any(|w| w == o.name), "{} in {top:?}", o.name);
    }
    assert!(top.iter().any(|w| w == "completion"), "{top:?}");
    let verbs = bash_completes(&script, "fwdctl route ");
    for v in ["add", "del", "replace", "show", "get", "flush"] {
        assert!(verbs.iter().any(|w| w == v), "{v} in {verbs:?}");
    }
    let keys = bash_completes(&script, "fwdctl route add 10.0.0.0/8 ");
    assert!(keys.iter().any(|w| w == "via"), "{keys:?}");
    assert_eq!(bash_completes(&script, "fwdctl -s /x rou"), ["route"]);
    std::fs::remove_file(&script).unwrap();

    let zsh = fwdctl(Path::new("/nonexistent"), &["completion", "zsh"]);
    assert!(zsh.status.success());
    assert!(String::from_utf8_lossy(&zsh.stdout).starts_with("#compdef fwdctl"));
    let bad = fwdctl(Path::new("/nonexistent"), &["completion", "fish"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}
