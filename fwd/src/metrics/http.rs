//! The HTTP transport of the metrics endpoint: a minimal HTTP/1.x server on
//! a std `TcpListener` that answers `GET /metrics` (and `HEAD`), 404 for
//! other paths, 405 for other methods, 400 for what is not HTTP.
//!
//! Bounds, so a slow or hostile client costs little and blocks no one for
//! long:
//! - one thread per connection, at most `max_connections` at once; the next
//!   one gets `503` at once (never waits for a slot);
//! - the request head must arrive whole within `timeout` of the connection
//!   and be at most [`MAX_REQUEST`] bytes (`408` / `431` otherwise); a body
//!   is never read; the answer must be taken within `timeout` too;
//! - one request per connection (`Connection: close`).
//!
//! A client that connects and sends nothing holds one slot for at most
//! `timeout`; others are served meanwhile. Stopping (dropping the
//! [`MetricsServer`]) closes every open connection and joins every
//! thread.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::render::Format;
use crate::thread::StoppableThread;

/// Largest request head (request line and headers) read.
pub const MAX_REQUEST: usize = 8192;
/// How often the accept loop looks at its stop flag when idle.
const TICK: Duration = Duration::from_millis(20);

/// What a scrape answers: the body in the asked format, or an error text
/// (answered as 503: the daemon cannot say now).
pub type Scrape = dyn Fn(Format) -> Result<String, String> + Send + Sync;

/// How the server is bounded.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub timeout: Duration,
}

/// The running endpoint; dropping it stops it.
pub struct MetricsServer {
    addr: SocketAddr,
    _thread: StoppableThread,
}

impl MetricsServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Binds `listen` and starts serving.
///
/// # Errors
/// When the address cannot be bound or the thread not spawned.
pub fn start(listen: SocketAddr, limits: Limits, scrape: Arc<Scrape>) -> io::Result<MetricsServer> {
    let listener = TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let thread = StoppableThread::spawn("fwd-metrics", move |stop| {
        accept_loop(&listener, limits, &scrape, stop);
    })?;
    Ok(MetricsServer {
        addr,
        _thread: thread,
    })
}

struct Conn {
    stream: TcpStream,
    thread: JoinHandle<()>,
}

fn accept_loop(listener: &TcpListener, limits: Limits, scrape: &Arc<Scrape>, stop: &AtomicBool) {
    let mut open: Vec<Conn> = Vec::new();
    // Relaxed: see `StoppableThread::drop`.
    while !stop.load(Ordering::Relaxed) {
        open.retain(|c| !c.thread.is_finished());
        match listener.accept() {
            Ok((stream, _)) => {
                if open.len() >= limits.max_connections {
                    busy(stream);
                    continue;
                }
                if let Some(c) = serve_on_thread(stream, limits, scrape) {
                    open.push(c);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(TICK),
            Err(e) => {
                eprintln!("fwd: metrics: accept: {e}");
                std::thread::sleep(TICK);
            }
        }
    }
    for c in &open {
        // Blocked reads see end of file and writes fail: every one ends.
        let _ = c.stream.shutdown(Shutdown::Both);
    }
    for c in open {
        let _ = c.thread.join();
    }
}

/// Answers 503 without waiting on the peer (a full socket buffer drops it).
/// What the peer sent already is read first, so the close is a FIN rather
/// than a reset that could discard the answer.
fn busy(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let mut sink = [0u8; 1024];
    for _ in 0..MAX_REQUEST / sink.len() {
        if !matches!(stream.read(&mut sink), Ok(n) if n > 0) {
            break;
        }
    }
    let _ = stream.write_all(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\
Retry-After: 1\r\n\r\n",
    );
    let _ = stream.shutdown(Shutdown::Write);
}

fn serve_on_thread(stream: TcpStream, limits: Limits, scrape: &Arc<Scrape>) -> Option<Conn> {
    let handle = stream.try_clone().ok()?;
    let scrape = Arc::clone(scrape);
    let thread = std::thread::Builder::new()
        .name("fwd-metrics-conn".into())
        .spawn(move || {
            let _ = serve(stream, limits.timeout, &*scrape);
        });
    match thread {
        Ok(thread) => Some(Conn {
            stream: handle,
            thread,
        }),
        Err(e) => {
            eprintln!("fwd: metrics: cannot start a connection thread: {e}");
            None
        }
    }
}

/// What the request head asked.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics { head: bool, format: Format },
    NotFound,
    Method,
}

/// Reads the request head within `deadline`: `Ok(None)` when the peer
/// closed, `Err(status)` when it was too slow or too large.
fn read_head(s: &mut TcpStream, deadline: Instant) -> Result<Option<Vec<u8>>, &'static str> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("408 Request Timeout");
        }
        if s.set_read_timeout(Some(left)).is_err() {
            return Ok(None);
        }
        let n = match s.read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err("408 Request Timeout")
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Ok(None),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if buf.len() > MAX_REQUEST {
            return Err("431 Request Header Fields Too Large");
        }
    }
}

/// Parses a request head (without its final blank line).
fn parse_head(head: &[u8]) -> Option<Asked> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if first.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut accept = None;
    for l in lines {
        let (k, v) = l.split_once(':')?;
        if k.eq_ignore_ascii_case("accept") {
            accept = Some(v.trim().to_ascii_lowercase());
        }
    }
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Some(Asked::Method),
    };
    let path = target.split('?').next().unwrap_or(target);
    if path != "/metrics" {
        return Some(Asked::NotFound);
    }
    // OpenMetrics unless the scraper names only the older text format.
    let format = match accept {
        Some(a) if a.contains("text/plain") && !a.contains("application/openmetrics-text") => {
            Format::PrometheusText
        }
        _ => Format::OpenMetrics,
    };
    Some(Asked::Metrics { head, format })
}

fn respond(
    s: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
Connection: close\r\n",
        body.len()
    );
    if status.starts_with("405") {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    let mut all = out.into_bytes();
    if !head_only {
        all.extend_from_slice(body);
    }
    s.write_all(&all)?;
    s.flush()
}

fn serve(mut s: TcpStream, timeout: Duration, scrape: &Scrape) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    s.set_write_timeout(Some(timeout))?;
    let text = "text/plain; charset=utf-8";
    let head = match read_head(&mut s, deadline) {
        Ok(Some(h)) => h,
        Ok(None) => return Ok(()),
        Err(status) => return respond(&mut s, status, text, status.as_bytes(), false),
    };
    match parse_head(&head) {
        None => respond(&mut s, "400 Bad Request", text, b"bad request\n", false),
        Some(Asked::Method) => respond(
            &mut s,
            "405 Method Not Allowed",
            text,
            b"only GET and HEAD\n",
            false,
        ),
        Some(Asked::NotFound) => respond(
            &mut s,
            "404 Not Found",
            text,
            b"not found: the metrics are at /metrics\n",
            false,
        ),
        Some(Asked::Metrics { head, format }) => match scrape(format) {
            Ok(body) => respond(
                &mut s,
                "200 OK",
                format.content_type(),
                body.as_bytes(),
                head,
            ),
            Err(e) => respond(
                &mut s,
                "503 Service Unavailable",
                text,
                format!("{e}\n").as_bytes(),
                head,
            ),
        },
    }?;
    // Let the peer read the answer before the close (no reset).
    let _ = s.shutdown(Shutdown::Write);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_are_parsed_strictly() {
        let om = Asked::Metrics {
            head: false,
            format: Format::OpenMetrics,
        };
        assert_eq!(parse_head(b"GET /metrics HTTP/1.1\r\nHost: x"), Some(om));
        assert_eq!(
            parse_head(b"GET /metrics?x=1 HTTP/1.0"),
            Some(Asked::Metrics {
                head: false,
                format: Format::OpenMetrics
            })
        );
        // What Prometheus sends: OpenMetrics first.
        let prom = b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,\
text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(matches!(
            parse_head(prom),
            Some(Asked::Metrics {
                format: Format::OpenMetrics,
                ..
            })
        ));
        assert!(matches!(
            parse_head(b"GET /metrics HTTP/1.1\r\naccept: text/plain"),
            Some(Asked::Metrics {
                format: Format::PrometheusText,
                ..
            })
        ));
        assert!(matches!(
            parse_head(b"HEAD /metrics HTTP/1.1"),
            Some(Asked::Metrics { head: true, .. })
        ));
        assert_eq!(parse_head(b"GET / HTTP/1.1"), Some(Asked::NotFound));
        assert_eq!(parse_head(b"GET /metricsx HTTP/1.1"), Some(Asked::NotFound));
        assert_eq!(parse_head(b"POST /metrics HTTP/1.1"), Some(Asked::Method));
        for bad in [
            &b"GET /metrics"[..],
            b"GET /metrics HTTP/2",
            b"GET  /metrics HTTP/1.1",
            b"GET /metrics HTTP/1.1\r\nno colon",
            b"\xff\xfe",
            b"",
        ] {
            assert_eq!(parse_head(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// The answer, as far as it came: a refused client whose request
    /// arrived after the refusal may see a reset (then maybe nothing).
    fn get(addr: SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let _ = c.write_all(req);
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn server(max_connections: usize, timeout: Duration) -> MetricsServer {
        let scrape: Arc<Scrape> = Arc::new(|f: Format| Ok(format!("body {f:?}\n")));
        let limits = Limits {
            max_connections,
            timeout,
        };
        start("127.0.0.1:0".parse().unwrap(), limits, scrape).unwrap()
    }

    #[test]
    fn answers_metrics_404_405_and_bounds_requests() {
        let s = server(4, Duration::from_secs(30));
        let a = s.local_addr();
        let ok = get(a, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(
            "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
        ));
        assert!(ok.ends_with("\r\n\r\nbody OpenMetrics\n"), "{ok}");
        let text = get(a, b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n");
        assert!(
            text.contains("Content-Type: text/plain; version=0.0.4"),
            "{text}"
        );
        let head = get(a, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        assert!(get(a, b"GET /other HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(a, b"DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(a, b"hello\r\n\r\n").starts_with("HTTP/1.1 400"));
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', 2 * MAX_REQUEST));
        big.extend_from_slice(b"\r\n\r\n");
        let mut c = TcpStream::connect(a).unwrap();
        let _ = c.write_all(&big); // the server may close before reading it all
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 431"), "{out}");
    }

    #[test]
    fn a_silent_client_blocks_no_other_scrape() {
        // Its timeout (10 minutes) is far beyond `get`'s read timeout: a
        // server that served it before the next would fail this test.
        let s = server(2, Duration::from_secs(600));
        let a = s.local_addr();
        let _silent = TcpStream::connect(a).unwrap();
        for _ in 0..3 {
            let ok = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
            assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        }
    }

    #[test]
    fn a_silent_client_is_cut_off_after_the_timeout() {
        let s = server(2, Duration::from_millis(500));
        let mut silent = TcpStream::connect(s.local_addr()).unwrap();
        silent
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut out = String::new();
        silent.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    }

    #[test]
    fn over_the_connection_bound_clients_get_503_until_a_slot_frees() {
        let s = server(1, Duration::from_millis(300));
        let a = s.local_addr();
        let silent = TcpStream::connect(a).unwrap();
        // Until the accept loop has taken the silent one, a scrape may still
        // get the slot; once taken, the next is refused at once.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
            if r.starts_with("HTTP/1.1 503") {
                break;
            }
            assert!(Instant::now() < deadline, "never refused: {r}");
        }
        drop(silent);
        // The slot frees (the silent client timed out or left): served again.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
            if r.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < deadline, "slot never freed: {r}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn stopping_closes_open_connections_and_joins() {
        let s = server(4, Duration::from_secs(600));
        let mut silent = TcpStream::connect(s.local_addr()).unwrap();
        // Make sure it is being served (a scrape after it is accepted too).
        let ok = get(s.local_addr(), b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"));
        drop(s); // returns although the silent client's timeout is 10 minutes
        silent
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut out = Vec::new();
        let _ = silent.read_to_end(&mut out);
    }
}
