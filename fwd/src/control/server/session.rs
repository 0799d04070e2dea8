//! One client session: the hello, then request lines answered in order.
//!
//! Bounded in every way a peer could hold the daemon:
//! - a session with no request started for `idle_timeout` is closed (with
//!   an error line saying so);
//! - a line (the hello included) must arrive whole within
//!   `request_timeout` of its first byte (no slowloris);
//! - an answer the peer does not take within `request_timeout` ends the
//!   session (the stream's write timeout);
//! - a line longer than `max_request_bytes` is answered `too_large`, and a
//!   buffer grown by a large line is given back after it.

use std::io::{self, BufRead, BufReader, BufWriter, Read};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use ctl::codec::{self, LineRead};
use ctl::wire::{ErrorBody, ErrorKind, HelloLine, HelloReply, Request, Response, ResponseLine};

use super::{reads, save, taps, Shared};

/// A request buffer larger than this is freed after its request.
const KEEP_BUFFER: usize = 64 << 10;

/// The stream as a reader with the session's deadlines: until the first
/// byte of a line, `idle`; from then, the line's deadline.
struct Deadlines {
    stream: UnixStream,
    idle: Duration,
    request: Duration,
    line_deadline: Option<Instant>,
}

impl Deadlines {
    /// The next line may take `idle` to start.
    fn next_line(&mut self) {
        self.line_deadline = None;
    }
}

impl Read for Deadlines {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let (wait, what) = match self.line_deadline {
                None => (self.idle, "idle"),
                Some(d) => (d.saturating_duration_since(Instant::now()), "line"),
            };
            if wait.is_zero() {
                return Err(timed_out(what, self.request));
            }
            self.stream.set_read_timeout(Some(wait))?;
            match self.stream.read(buf) {
                Ok(n) => {
                    if n > 0 && self.line_deadline.is_none() {
                        self.line_deadline = Some(Instant::now() + self.request);
                    }
                    return Ok(n);
                }
                // A signal caught by this thread interrupts a read that has
                // a timeout even under SA_RESTART (signal(7)); not every
                // caller retries (`fill_buf`), and a session ended by it
                // left its client with a broken pipe. Read again: the
                // deadline still counts.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(timed_out(
                        what,
                        if what == "idle" {
                            self.idle
                        } else {
                            self.request
                        },
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn timed_out(what: &str, d: Duration) -> io::Error {
    let msg = if what == "idle" {
        format!("no request for {} s: closing the session", d.as_secs())
    } else {
        format!(
            "a request line did not arrive whole within {} s: closing the session",
            d.as_secs()
        )
    };
    io::Error::new(io::ErrorKind::TimedOut, msg)
}

type Writer = BufWriter<UnixStream>;

pub(super) fn send(w: &mut Writer, line: &ResponseLine) -> io::Result<()> {
    codec::write_line(w, line)
}

/// Runs a session to its end (end of file, a timeout, a write error or the
/// server stopping).
pub(super) fn run(sh: &Shared, stream: UnixStream, admin: bool) -> io::Result<()> {
    let mut w = BufWriter::new(stream.try_clone()?);
    let mut r = BufReader::new(Deadlines {
        stream,
        idle: sh.cfg.idle_timeout,
        request: sh.cfg.request_timeout,
        // The hello is due at once.
        line_deadline: Some(Instant::now() + sh.cfg.request_timeout),
    });
    let mut greeted = false;
    match serve(sh, &mut r, &mut w, admin, &mut greeted) {
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            // Said in the form the client waits for: a hello answer before
            // the hello, an error line with id 0 after it.
            let e = ErrorBody::new(ErrorKind::Busy, e.to_string());
            let _ = if greeted {
                send(&mut w, &ResponseLine::error(0, e))
            } else {
                codec::write_line(&mut w, &HelloReply::Error(e))
            };
            io::Write::flush(&mut w)
        }
        other => other,
    }
}

fn serve(
    sh: &Shared,
    r: &mut BufReader<Deadlines>,
    w: &mut Writer,
    admin: bool,
    greeted: &mut bool,
) -> io::Result<()> {
    let mut buf = Vec::new();
    match codec::read_line_limited(r, &mut buf, 4096)? {
        LineRead::Line => {}
        LineRead::Eof => return Ok(()),
        LineRead::TooLong => {
            let e = ErrorBody::new(ErrorKind::TooLarge, "hello too long");
            codec::write_line(w, &HelloReply::Error(e))?;
            return io::Write::flush(w);
        }
    }
    let answer = match codec::decode::<HelloLine>(&buf) {
        Ok(h) => HelloReply::answer(&h.hello, &sh.ctx.version),
        Err(e) => HelloReply::Error(e),
    };
    codec::write_line(w, &answer)?;
    io::Write::flush(w)?;
    if matches!(answer, HelloReply::Error(_)) {
        return Ok(());
    }
    *greeted = true;
    let max = sh.cfg.max_request_bytes;
    while !sh.shutdown.is_set() {
        r.get_mut().next_line();
        // The start of the next line, to address a too-long request's error
        // to its id (clients put `"id"` first).
        let head: Vec<u8> = r.fill_buf()?.iter().take(64).copied().collect();
        match codec::read_line_limited(r, &mut buf, max)? {
            LineRead::Eof => return Ok(()),
            LineRead::TooLong => {
                let e = ErrorBody::new(
                    ErrorKind::TooLarge,
                    format!("request longer than {max} bytes"),
                );
                send(w, &ResponseLine::error(leading_id(&head), e))?;
            }
            LineRead::Line => match codec::decode_request(&buf) {
                Err((id, e)) => send(w, &ResponseLine::error(id, e))?,
                Ok(req) => {
                    // A big batch's buffer is not kept while it is applied.
                    buf = Vec::new();
                    handle(sh, w, req.id, req.request, admin)?;
                }
            },
        }
        if buf.capacity() > KEEP_BUFFER {
            buf = Vec::new();
        }
        io::Write::flush(w)?;
    }
    Ok(())
}

/// The id of a request line from its first bytes (`{"id":N,...`), 0 if
/// it cannot be seen there.
fn leading_id(head: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(head);
    text.split_once("\"id\":")
        .map(|(_, rest)| rest.trim_start())
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// Answers one request.
fn handle(sh: &Shared, w: &mut Writer, id: u64, req: Request, admin: bool) -> io::Result<()> {
    let ctx = &sh.ctx;
    let ok = |w: &mut Writer, r: Result<Response, ErrorBody>| match r {
        Ok(r) => send(w, &ResponseLine::ok(id, r)),
        Err(e) => send(w, &ResponseLine::error(id, e)),
    };
    match req {
        Request::Change(c) => ok(w, ctx.control.apply(vec![c]).map(Response::Done)),
        Request::Batch { changes } => ok(w, ctx.control.apply(changes).map(Response::Done)),
        Request::ConfigSave { path } => ok(
            w,
            save::config_save(ctx, &sh.cfg, sh.policy.own_uid, &path, admin),
        ),
        Request::NeighFlush { dev } => ok(w, reads::neigh_flush(ctx, dev.as_deref())),
        Request::Status {} => ok(w, reads::status(ctx, sh.clients())),
        Request::Watch { interval_ms, count } => {
            reads::watch(w, ctx, &sh.shutdown, id, interval_ms, count)
        }
        Request::Trace {
            count,
            port,
            filter,
        } => taps::trace(w, ctx, &sh.shutdown, id, count, port.as_deref(), &filter),
        Request::Capture {
            port,
            direction,
            filter,
            count,
            snaplen,
            rate,
        } => {
            let ask = taps::CaptureAsk {
                port: &port,
                direction,
                filter: &filter,
                count,
                snaplen,
                rate,
            };
            taps::capture(w, ctx, &sh.shutdown, id, &ask)
        }
        other => reads::answer(w, ctx, id, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_too_long_line_is_read_from_its_start() {
        assert_eq!(leading_id(br#"{"id":42,"request":{"batch"#), 42);
        assert_eq!(leading_id(br#"{"id": 7,"#), 7);
        assert_eq!(leading_id(b"garbage"), 0);
    }

    /// A signal caught while a session waits for its next line does not end
    /// the session (it did: `fill_buf` passed EINTR on, and the client's
    /// next write met a broken pipe). The reader is signalled over and over
    /// while it waits, then the line is sent; the read must return it.
    #[test]
    fn a_signal_during_the_wait_does_not_end_the_read() {
        use nix::sys::pthread::{pthread_kill, pthread_self};
        use nix::sys::signal::Signal;
        use std::io::Write;
        use std::sync::atomic::AtomicBool;
        use std::sync::{mpsc, Arc};

        // A handler (flag only), so the signal interrupts instead of
        // killing or being ignored.
        signal_hook::flag::register(libc::SIGUSR2, Arc::new(AtomicBool::new(false)))
            .expect("handler");
        let (ours, mut theirs) = UnixStream::pair().expect("pair");
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            tx.send(pthread_self()).expect("send thread id");
            let mut r = BufReader::new(Deadlines {
                stream: ours,
                idle: Duration::from_secs(60),
                request: Duration::from_secs(60),
                line_deadline: None,
            });
            r.fill_buf().map(|b| b.to_vec())
        });
        let thread = rx.recv().expect("thread id");
        for _ in 0..50 {
            pthread_kill(thread, Signal::SIGUSR2).expect("signal the reader");
            std::thread::sleep(Duration::from_millis(2));
        }
        theirs.write_all(b"{\"id\":1}\n").expect("write");
        let got = reader.join().expect("reader");
        assert_eq!(got.expect("the read survives the signals"), b"{\"id\":1}\n");
    }
}
