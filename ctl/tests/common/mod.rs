//! A fake daemon for client and CLI tests: a thread on a unix socket in a
//! temp dir that speaks the protocol with canned answers and records every
//! line it receives. It exercises the client and the codec only; the real
//! server is the daemon's.

#![allow(dead_code)]

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use ctl::codec::{decode, decode_request, read_line_limited, write_line, LineRead};
use ctl::wire::*;

/// What the fake answers to a request: the lines to send.
pub type Behaviour = fn(u64, &Request) -> Vec<ResponseLine>;

pub struct FakeServer {
    pub path: PathBuf,
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    /// Every line received, hello included, in order.
    pub lines: Arc<Mutex<Vec<String>>>,
    /// Connections accepted.
    pub connections: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl FakeServer {
    /// A server speaking protocol `version` with the canned answers.
    pub fn start() -> FakeServer {
        FakeServer::with(PROTOCOL_VERSION, canned)
    }

    pub fn with(version: u32, behaviour: Behaviour) -> FakeServer {
        let dir = std::env::temp_dir().join(format!(
            "ctl-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fwd.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, lines, connections) = (stop.clone(), lines.clone(), connections.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { return };
                    connections.fetch_add(1, Ordering::SeqCst);
                    serve(conn, version, behaviour, &lines);
                }
            })
        };
        FakeServer {
            path,
            dir,
            stop,
            lines,
            connections,
            thread: Some(thread),
        }
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn serve(conn: UnixStream, version: u32, behaviour: Behaviour, log: &Mutex<Vec<String>>) {
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut w = BufWriter::new(conn);
    let mut buf = Vec::new();
    let record = |buf: &[u8]| {
        log.lock()
            .unwrap()
            .push(String::from_utf8_lossy(buf).into_owned());
    };
    if read_line_limited(&mut r, &mut buf, 1 << 30).unwrap_or(LineRead::Eof) != LineRead::Line {
        return;
    }
    record(&buf);
    let hello: HelloLine = match decode(&buf) {
        Ok(h) => h,
        Err(e) => {
            let _ = write_line(&mut w, &HelloReply::Error(e));
            return;
        }
    };
    let reply = if hello.hello.protocol == version {
        HelloReply::Hello(ServerHello {
            protocol: version,
            daemon: "fake 0.0.0".into(),
        })
    } else {
        HelloReply::Error(ErrorBody::new(
            ErrorKind::Unsupported,
            format!("this fake speaks protocol {version}"),
        ))
    };
    let refused = matches!(reply, HelloReply::Error(_));
    if write_line(&mut w, &reply).and_then(|()| w.flush()).is_err() || refused {
        return;
    }
    loop {
        match read_line_limited(&mut r, &mut buf, 1 << 30) {
            Ok(LineRead::Line) => {}
            _ => return,
        }
        record(&buf);
        let out = match decode_request(&buf) {
            Ok(l) => behaviour(l.id, &l.request),
            Err((id, e)) => vec![ResponseLine::error(id, e)],
        };
        for l in out {
            if write_line(&mut w, &l).is_err() {
                return;
            }
        }
        if w.flush().is_err() {
            return;
        }
    }
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

pub fn routes() -> Vec<Route> {
    vec![
        Route {
            linkdown: false,
            proto: None,
            prefix: net("10.0.0.0/8"),
            table: 0,
            target: RouteTarget::Gateway {
                via: Some("10.0.1.2".parse().unwrap()),
                dev: Some("p1".into()),
            },
        },
        Route {
            linkdown: false,
            proto: None,
            prefix: net("192.0.2.0/24"),
            table: 0,
            target: RouteTarget::Blackhole,
        },
        Route {
            linkdown: false,
            proto: None,
            prefix: net("2001:db8::/32"),
            table: 5,
            target: RouteTarget::Group(10),
        },
    ]
}

pub fn status() -> StatusReport {
    StatusReport {
        version: "fake 0.0.0".into(),
        uptime_ms: 3_723_000,
        generation: 42,
        workers: vec![
            WorkerStatus {
                name: "worker-1".into(),
                online: true,
                reported_generation: Some(41),
                stalled: false,
                last_progress_ms: 1,
            },
            WorkerStatus {
                name: "worker-2".into(),
                online: false,
                reported_generation: None,
                stalled: false,
                last_progress_ms: 5000,
            },
        ],
        pending_objects: 3,
        pending_bytes: 4096,
        publish_to_quiescent: Latency {
            count: 10,
            p50_ns: 12_000,
            p99_ns: 80_000,
            p999_ns: 90_000,
            max_ns: 100_000,
        },
        clients: 1,
        routing: Some(RoutingUsage {
            tables: 2,
            tables_limit: 1024,
            bytes: 113 << 20,
            bytes_limit: 2048 << 20,
        }),
        ..StatusReport::default()
    }
}

/// The canned daemon.
pub fn canned(id: u64, req: &Request) -> Vec<ResponseLine> {
    let done = |changes: u64, rule_ids: Vec<u32>| {
        vec![ResponseLine::ok(
            id,
            Response::Done(Done {
                generation: 7,
                changes,
                rule_ids,
            }),
        )]
    };
    let err = |kind, msg: &str| vec![ResponseLine::error(id, ErrorBody::new(kind, msg))];
    match req {
        Request::Status {} => vec![ResponseLine::ok(id, Response::Status(status()))],
        Request::Stats {} => vec![ResponseLine::ok(
            id,
            Response::Stats(StatsReport {
                uptime_ms: 1000,
                rx_packets: 10,
                tx_packets: 9,
                dropped: 1,
                drops: vec![DropCount {
                    reason: "no_route".into(),
                    packets: 1,
                }],
                events: Vec::new(),
                lcores: vec![LcoreStats {
                    lcore: 1,
                    polls: 100,
                    busy_polls: 50,
                    idle_sleep_ms: 1234,
                    rx_packets: 10,
                    tx_packets: 9,
                    dropped: 1,
                }],
                ports: vec![PortStats {
                    name: "p1".into(),
                    rx_packets: 10,
                    ..PortStats::default()
                }],
                rates: None,
            }),
        )],
        Request::RouteShow(..) => {
            let mut v: Vec<ResponseLine> = routes()
                .into_iter()
                .map(|r| ResponseLine::item(id, Item::Route(r)))
                .collect();
            v.push(ResponseLine::end(id, 3));
            v
        }
        // A stream that fails after one item.
        Request::RuleShow { .. } => vec![
            ResponseLine::item(
                id,
                Item::Rule(Rule {
                    id: Some(1),
                    priority: 10,
                    matches: RuleMatch::default(),
                    actions: vec![Action::Drop],
                }),
            ),
            ResponseLine::error(id, ErrorBody::new(ErrorKind::Internal, "snapshot lost")),
        ],
        Request::Watch { count, .. } => {
            let n = count.unwrap_or(3);
            let mut v: Vec<ResponseLine> = (0..n)
                .map(|i| {
                    ResponseLine::item(
                        id,
                        Item::Rates(RateSample {
                            uptime_ms: 1000 * (i + 1),
                            interval_ms: 1000,
                            rx_pps: 1_000_000,
                            tx_pps: 999_000,
                            ..RateSample::default()
                        }),
                    )
                })
                .collect();
            v.push(ResponseLine::end(id, n));
            v
        }
        Request::RouteGet { addr, .. } if addr.to_string() == "10.1.2.3" => {
            vec![ResponseLine::ok(
                id,
                Response::RouteLookup(RouteLookup {
                    addr: *addr,
                    table: 0,
                    route: routes()[0].clone(),
                    paths: vec![Path {
                        nhid: None,
                        via: Some("10.0.1.2".parse().unwrap()),
                        dev: "p1".into(),
                        weight: 1,
                        lladdr: Some("02:00:00:00:01:02".parse().unwrap()),
                    }],
                }),
            )]
        }
        Request::RouteGet { addr, .. } => err(ErrorKind::NotFound, &format!("no route to {addr}")),
        Request::Change(Change::RouteAdd(r)) if r.prefix == net("10.9.0.0/16") => {
            err(ErrorKind::Exists, "route 10.9.0.0/16 table 0 exists")
        }
        Request::Change(Change::RuleAdd(r)) if r.id.is_none() => done(1, vec![100]),
        Request::Change(_) => done(1, vec![]),
        Request::Batch { changes } => {
            let bad = changes.iter().position(|c| {
                matches!(c, Change::RouteAdd(Route { target: RouteTarget::Gateway { dev: Some(d), .. }, .. }) if d == "p9")
            });
            match bad {
                Some(i) => vec![ResponseLine::error(
                    id,
                    ErrorBody::new(ErrorKind::Invalid, "unknown port 'p9'").at(i as u64 + 1),
                )],
                None => done(changes.len() as u64, vec![]),
            }
        }
        Request::ConfigSave { path } => vec![ResponseLine::ok(
            id,
            Response::Saved(Saved {
                path: path.clone(),
                generation: 7,
                lines: 3,
            }),
        )],
        _ => err(ErrorKind::Unsupported, "not in the fake"),
    }
}
