//! `Client` against a fake daemon thread: hello, calls, streams, errors,
//! and the exact lines the client puts on the wire.

mod common;

use std::ops::ControlFlow;

use common::FakeServer;
use ctl::wire::*;
use ctl::{Client, ClientError};

#[test]
fn hello_call_stream_and_errors() {
    let server = FakeServer::start();
    let mut c = Client::connect(&server.path).unwrap();
    assert_eq!(c.server().daemon, "fake 0.0.0");
    assert_eq!(c.server().protocol, PROTOCOL_VERSION);

    // A call.
    assert_eq!(
        c.call(&Request::Status {}).unwrap(),
        Response::Status(common::status())
    );

    // A stream.
    let mut got = Vec::new();
    let n = c
        .call_stream(
            &Request::RouteShow(RouteFilter {
                table: None,
                family: None,
                within: None,
                proto: None,
            }),
            |i| {
                got.push(i);
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    assert_eq!(n, 3);
    let want: Vec<Item> = common::routes().into_iter().map(Item::Route).collect();
    assert_eq!(got, want);

    // An error answer; the connection stays usable.
    let e = c
        .call(&Request::RouteGet {
            addr: "10.9.9.9".parse().unwrap(),
            table: 0,
        })
        .unwrap_err();
    match e {
        ClientError::Server(b) => {
            assert_eq!(b.kind, ErrorKind::NotFound);
            assert_eq!(b.message, "no route to 10.9.9.9");
        }
        other => panic!("{other:?}"),
    }

    // A stream that ends in an error after one item.
    let mut items = 0;
    let e = c
        .call_stream(&Request::RuleShow { id: None }, |_| {
            items += 1;
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert_eq!(items, 1);
    assert!(
        matches!(e, ClientError::Server(ref b) if b.kind == ErrorKind::Internal),
        "{e:?}"
    );

    // A change, then a batch refused at its third change.
    let r = c
        .call(&Request::Change(Change::RuleAdd(Box::new(Rule {
            id: None,
            priority: 1,
            matches: RuleMatch::default(),
            actions: vec![Action::Drop],
        }))))
        .unwrap();
    assert_eq!(
        r,
        Response::Done(Done {
            generation: 7,
            changes: 1,
            rule_ids: vec![100]
        })
    );
    let route = |dev: &str| {
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: "10.0.0.0/8".parse().unwrap(),
            table: 0,
            target: RouteTarget::Gateway {
                via: None,
                dev: Some(dev.into()),
            },
        })
    };
    let e = c
        .call(&Request::Batch {
            changes: vec![route("p1"), route("p2"), route("p9"), route("p1")],
        })
        .unwrap_err();
    match e {
        ClientError::Server(b) => {
            assert_eq!(b.kind, ErrorKind::Invalid);
            assert_eq!(b.index, Some(3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.call(&Request::Status {}).unwrap(),
        Response::Status(common::status())
    );
    drop(c);

    // What went over the wire, byte for byte.
    let lines = server.lines();
    assert_eq!(
        lines[0],
        r#"{"hello":{"protocol":1,"client":"fwdctl 0.1.0"}}"#
    );
    assert_eq!(lines[1], r#"{"id":1,"request":{"status":{}}}"#);
    assert_eq!(lines[2], r#"{"id":2,"request":{"route_show":{}}}"#);
    assert_eq!(
        lines[3],
        r#"{"id":3,"request":{"route_get":{"addr":"10.9.9.9"}}}"#
    );
    assert_eq!(
        lines[6],
        concat!(
            r#"{"id":6,"request":{"batch":{"changes":["#,
            r#"{"route_add":{"prefix":"10.0.0.0/8","target":{"gateway":{"dev":"p1"}}}},"#,
            r#"{"route_add":{"prefix":"10.0.0.0/8","target":{"gateway":{"dev":"p2"}}}},"#,
            r#"{"route_add":{"prefix":"10.0.0.0/8","target":{"gateway":{"dev":"p9"}}}},"#,
            r#"{"route_add":{"prefix":"10.0.0.0/8","target":{"gateway":{"dev":"p1"}}}}]}}}"#
        )
    );
    assert_eq!(lines.len(), 8);
}

#[test]
fn version_mismatch_is_refused_at_hello() {
    let server = FakeServer::with(PROTOCOL_VERSION + 1, common::canned);
    match Client::connect(&server.path) {
        Err(ClientError::Server(b)) => assert_eq!(b.kind, ErrorKind::Unsupported),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("connected"),
    }
}

#[test]
fn no_daemon_is_an_io_error() {
    let dir = std::env::temp_dir().join(format!("ctl-nodaemon-{}", std::process::id()));
    match Client::connect(dir.join("none.sock")) {
        Err(ClientError::Io(_)) => {}
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("connected"),
    }
}

fn wrong_id(id: u64, _: &Request) -> Vec<ResponseLine> {
    vec![ResponseLine::ok(
        id + 1,
        Response::Done(Done {
            generation: 1,
            changes: 1,
            rule_ids: vec![],
        }),
    )]
}

#[test]
fn an_answer_for_another_id_breaks_the_connection() {
    let server = FakeServer::with(PROTOCOL_VERSION, wrong_id);
    let mut c = Client::connect(&server.path).unwrap();
    let e = c.call(&Request::Status {}).unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("id 2")),
        "{e:?}"
    );
    let e = c.call(&Request::Status {}).unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("reconnect")),
        "{e:?}"
    );
}

#[test]
fn stream_and_single_answers_are_not_confused() {
    let server = FakeServer::start();
    let mut c = Client::connect(&server.path).unwrap();
    // `call` on a request the server answers with a stream.
    let e = c
        .call(&Request::RouteShow(RouteFilter {
            table: None,
            family: None,
            within: None,
            proto: None,
        }))
        .unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e:?}");
    // The fake serves one connection at a time: hang up before reconnecting.
    drop(c);
    let mut c = Client::connect(&server.path).unwrap();
    // `call_stream` on a request the server answers with `ok`.
    let e = c
        .call_stream(&Request::Status {}, |_| ControlFlow::Continue(()))
        .unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e:?}");
}

#[test]
fn stopping_a_stream_early_retires_the_connection() {
    let server = FakeServer::start();
    let mut c = Client::connect(&server.path).unwrap();
    let mut seen = 0;
    let n = c
        .call_stream(
            &Request::Watch {
                interval_ms: 1000,
                count: Some(5),
            },
            |_| {
                seen += 1;
                if seen == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .unwrap();
    assert_eq!(n, 2);
    assert!(matches!(
        c.call(&Request::Status {}),
        Err(ClientError::Protocol(_))
    ));
}

fn bad_end_count(id: u64, _: &Request) -> Vec<ResponseLine> {
    vec![
        ResponseLine::item(
            id,
            Item::Address(Address {
                addr: "10.0.1.1/24".parse().unwrap(),
                dev: "p1".into(),
            }),
        ),
        ResponseLine::end(id, 2),
    ]
}

#[test]
fn a_short_stream_is_detected() {
    let server = FakeServer::with(PROTOCOL_VERSION, bad_end_count);
    let mut c = Client::connect(&server.path).unwrap();
    let e = c
        .call_stream(&Request::AddressShow { dev: None }, |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("count 2")),
        "{e:?}"
    );
}

#[test]
fn undecodable_requests_get_a_bad_request_with_their_id() {
    use std::io::{BufRead, BufReader, Write};
    let server = FakeServer::start();
    let mut s = std::os::unix::net::UnixStream::connect(&server.path).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"{\"hello\":{\"protocol\":1,\"client\":\"raw\"}}\n")
        .unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(
        line,
        "{\"hello\":{\"protocol\":1,\"daemon\":\"fake 0.0.0\"}}\n"
    );
    s.write_all(b"{\"id\":5,\"request\":{\"route_ad\":{}}}\n")
        .unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    let l: ResponseLine = ctl::decode(line.as_bytes()).unwrap();
    assert_eq!(l.id, 5);
    assert!(
        matches!(l.body, Reply::Error(ref b) if b.kind == ErrorKind::BadRequest && b.message.contains("route_ad")),
        "{line}"
    );
}

#[test]
fn a_batch_encoded_while_parsing_goes_out_as_the_same_request() {
    let server = FakeServer::start();
    let mut c = Client::connect(&server.path).unwrap();
    let text = "route add 10.0.0.0/8 via 10.0.1.2 dev p1\n# c\nroute add 10.1.0.0/16 blackhole\n";
    let mut enc = ctl::codec::BatchEncoder::default();
    ctl::text::for_each_change(text, |_, ch| enc.push(&ch).unwrap()).unwrap();
    let r = c.call_encoded(&enc.finish()).unwrap();
    assert_eq!(
        r,
        Response::Done(Done {
            generation: 7,
            changes: 2,
            rule_ids: vec![]
        })
    );
    let typed = RequestLine {
        id: 1,
        request: Request::Batch {
            changes: ctl::text::parse_batch(text).unwrap().changes,
        },
    };
    drop(c);
    assert_eq!(server.lines()[1], ctl::encode(&typed).unwrap());
}
