//! A small blocking client: connect, hello, then one request at a time.
//!
//! Contract: [`Client::connect`] returns only after the server accepted the
//! hello. [`Client::call`] and [`Client::call_stream`] send one request and
//! read its whole answer, checking that every line carries the request's
//! id. After an I/O or protocol error, or a stream the caller stopped early,
//! the connection is out of step and every later call fails with
//! [`ClientError::Protocol`]; connect again.

use std::fmt;
use std::io::{self, BufReader, BufWriter, Write};
use std::ops::{ControlFlow, RangeInclusive};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::codec::{decode, read_line_limited, write_line, EncodedRequest, LineRead};
use crate::wire::{
    ErrorBody, ErrorKind, Hello, HelloLine, HelloReply, Item, Reply, Request, Response,
    ResponseLine, ServerHello, CLIENT_NAME, PROTOCOLS,
};

/// Longest line the client accepts from the server (one response or item).
pub const MAX_RESPONSE_LINE: usize = 64 << 20;

/// Why a call did not produce an answer.
#[derive(Debug)]
pub enum ClientError {
    /// The socket failed (connect, read, write, or the daemon hung up).
    Io(io::Error),
    /// The server answered with an error; nothing was changed.
    Server(ErrorBody),
    /// The server's lines do not follow the protocol, or the connection is
    /// out of step after an earlier failure.
    Protocol(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "{e}"),
            ClientError::Server(e) => write!(f, "{e}"),
            ClientError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Io(e) => Some(e),
            ClientError::Server(e) => Some(e),
            ClientError::Protocol(_) => None,
        }
    }
}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

/// A connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: BufWriter<UnixStream>,
    line: Vec<u8>,
    next_id: u64,
    server: ServerHello,
    broken: bool,
}

impl Client {
    /// Connects to the socket at `path` and says hello as [`CLIENT_NAME`].
    ///
    /// # Errors
    /// [`ClientError::Io`] when the socket cannot be reached,
    /// [`ClientError::Server`] when the daemon refuses the hello (e.g.
    /// `unsupported` protocol version), [`ClientError::Protocol`] on a
    /// malformed answer.
    pub fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        Client::connect_speaking(path, CLIENT_NAME, PROTOCOLS)
    }

    /// Connects as `client` speaking `versions`. A daemon that refuses the
    /// hello as `unsupported` (one from before version negotiation wants
    /// its own version exactly) is tried once more with the oldest version.
    ///
    /// # Errors
    /// As [`Client::connect`].
    pub fn connect_speaking(
        path: impl AsRef<Path>,
        client: &str,
        versions: RangeInclusive<u32>,
    ) -> Result<Client, ClientError> {
        let path = path.as_ref();
        match Client::handshake_speaking(UnixStream::connect(path)?, client, versions.clone()) {
            Err(ClientError::Server(e))
                if e.kind == ErrorKind::Unsupported && versions.start() != versions.end() =>
            {
                let oldest = *versions.start()..=*versions.start();
                Client::handshake_speaking(UnixStream::connect(path)?, client, oldest)
            }
            other => other,
        }
    }

    /// Says hello on an already connected stream, as `client`.
    ///
    /// # Errors
    /// As [`Client::connect`].
    pub fn handshake(stream: UnixStream, client: &str) -> Result<Client, ClientError> {
        Client::handshake_speaking(stream, client, PROTOCOLS)
    }

    /// Says hello speaking `versions`.
    ///
    /// # Errors
    /// As [`Client::connect`]; a daemon answering a version outside
    /// `versions` is a protocol error.
    pub fn handshake_speaking(
        stream: UnixStream,
        client: &str,
        versions: RangeInclusive<u32>,
    ) -> Result<Client, ClientError> {
        let mut c = Client {
            reader: BufReader::with_capacity(64 * 1024, stream.try_clone()?),
            writer: BufWriter::with_capacity(64 * 1024, stream),
            line: Vec::new(),
            next_id: 1,
            server: ServerHello {
                protocol: 0,
                daemon: String::new(),
            },
            broken: true,
        };
        let hello = HelloLine {
            hello: Hello::new(client, versions.clone()),
        };
        write_line(&mut c.writer, &hello)?;
        c.writer.flush()?;
        c.read_line()?;
        match decode::<HelloReply>(&c.line).map_err(|e| ClientError::Protocol(e.message))? {
            HelloReply::Hello(h) => {
                if !versions.contains(&h.protocol) {
                    return Err(ClientError::Protocol(format!(
                        "server answered protocol {} to a hello for {}..={}",
                        h.protocol,
                        versions.start(),
                        versions.end()
                    )));
                }
                c.server = h;
                c.broken = false;
                Ok(c)
            }
            HelloReply::Error(e) => Err(ClientError::Server(e)),
        }
    }

    /// What the server said in its hello.
    pub fn server(&self) -> &ServerHello {
        &self.server
    }

    /// Bounds each blocking read and write (`None`: wait forever, the
    /// default; a big batch can take a while).
    ///
    /// # Errors
    /// The socket option's I/O error.
    pub fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.writer.get_ref().set_read_timeout(t)?;
        self.writer.get_ref().set_write_timeout(t)
    }

    /// Sends a non-stream request and returns its `ok` answer.
    ///
    /// # Errors
    /// [`ClientError::Server`] for an `error` answer; `Protocol` if the
    /// server answers with a stream or a wrong id; `Io` on socket failure.
    pub fn call(&mut self, req: &Request) -> Result<Response, ClientError> {
        let id = self.send(req)?;
        match self.next(id)? {
            Reply::Ok(r) => Ok(r),
            Reply::Error(e) => Err(ClientError::Server(e)),
            Reply::Item(_) | Reply::End(_) => {
                Err(self.fail("a stream answer to a non-stream request"))
            }
        }
    }

    /// [`Client::call`] for a request encoded ahead (a big batch built with
    /// [`crate::codec::BatchEncoder`] while parsing).
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn call_encoded(&mut self, req: &EncodedRequest) -> Result<Response, ClientError> {
        let id = self.send_with(|w, id| {
            write!(w, "{{\"id\":{id},\"request\":")?;
            w.write_all(req.as_bytes())?;
            w.write_all(b"}\n")
        })?;
        match self.next(id)? {
            Reply::Ok(r) => Ok(r),
            Reply::Error(e) => Err(ClientError::Server(e)),
            Reply::Item(_) | Reply::End(_) => {
                Err(self.fail("a stream answer to a non-stream request"))
            }
        }
    }

    /// Sends a stream request and hands each item to `f` until the `end`
    /// line; returns the number of items. `f` may stop early with
    /// `ControlFlow::Break(())`: the call then returns the items seen so far
    /// and the connection can no longer be used.
    ///
    /// # Errors
    /// [`ClientError::Server`] when the answer is (or ends with) an error;
    /// `Protocol` on an `ok` answer, a wrong id, or an `end` count that
    /// differs from the items received; `Io` on socket failure.
    pub fn call_stream<F>(&mut self, req: &Request, mut f: F) -> Result<u64, ClientError>
    where
        F: FnMut(Item) -> ControlFlow<()>,
    {
        let id = self.send(req)?;
        let mut n = 0u64;
        loop {
            match self.next(id)? {
                Reply::Item(i) => {
                    n += 1;
                    if f(i).is_break() {
                        self.broken = true;
                        return Ok(n);
                    }
                }
                Reply::End(e) if e.count == n => return Ok(n),
                Reply::End(e) => {
                    return Err(self.fail(&format!(
                        "stream ended with count {} after {n} items",
                        e.count
                    )))
                }
                Reply::Error(e) => return Err(ClientError::Server(e)),
                Reply::Ok(_) => return Err(self.fail("an ok answer to a stream request")),
            }
        }
    }

    fn send(&mut self, req: &Request) -> Result<u64, ClientError> {
        // Serialize straight into the socket's buffer: a full-table batch is
        // tens of megabytes and needs no second copy.
        self.send_with(|w, id| write_line(w, &RequestLineRef { id, request: req }))
    }

    fn send_with<F>(&mut self, write: F) -> Result<u64, ClientError>
    where
        F: FnOnce(&mut BufWriter<UnixStream>, u64) -> io::Result<()>,
    {
        if self.broken {
            return Err(ClientError::Protocol(
                "connection out of step after an earlier failure; reconnect".into(),
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.broken = true;
        write(&mut self.writer, id)?;
        self.writer.flush()?;
        self.broken = false;
        Ok(id)
    }

    fn next(&mut self, id: u64) -> Result<Reply, ClientError> {
        self.broken = true;
        self.read_line()?;
        let l: ResponseLine = decode(&self.line).map_err(|e| ClientError::Protocol(e.message))?;
        if l.id != id {
            return Err(ClientError::Protocol(format!(
                "answer for id {} while waiting for id {id}",
                l.id
            )));
        }
        self.broken = false;
        Ok(l.body)
    }

    fn read_line(&mut self) -> Result<(), ClientError> {
        match read_line_limited(&mut self.reader, &mut self.line, MAX_RESPONSE_LINE)? {
            LineRead::Line => Ok(()),
            LineRead::Eof => Err(ClientError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection",
            ))),
            LineRead::TooLong => Err(ClientError::Protocol(format!(
                "a line from the server exceeds {MAX_RESPONSE_LINE} bytes"
            ))),
        }
    }

    fn fail(&mut self, what: &str) -> ClientError {
        self.broken = true;
        ClientError::Protocol(what.to_string())
    }
}

/// [`crate::wire::RequestLine`] by reference, so sending does not clone
/// the request.
#[derive(serde::Serialize)]
struct RequestLineRef<'a> {
    id: u64,
    request: &'a Request,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::RequestLine;

    #[test]
    fn borrowed_request_line_encodes_like_the_owned_one() {
        let request = Request::RouteGet {
            addr: "10.1.2.3".parse().unwrap(),
            table: 5,
        };
        let owned = RequestLine {
            id: 3,
            request: request.clone(),
        };
        let borrowed = RequestLineRef {
            id: 3,
            request: &request,
        };
        assert_eq!(
            crate::encode(&owned).unwrap(),
            crate::encode(&borrowed).unwrap()
        );
    }

    /// A daemon from before negotiation: it wants version 1 exactly.
    fn old_daemon(path: &std::path::Path) -> std::thread::JoinHandle<Vec<String>> {
        let l = std::os::unix::net::UnixListener::bind(path).unwrap();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let (s, _) = l.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                std::io::BufRead::read_line(&mut r, &mut line).unwrap();
                let h: HelloLine = decode(line.trim_end().as_bytes()).unwrap();
                seen.push(line.trim_end().to_string());
                let reply = if h.hello.protocol == 1 {
                    HelloReply::Hello(ServerHello {
                        protocol: 1,
                        daemon: "old".into(),
                    })
                } else {
                    HelloReply::Error(ErrorBody::new(ErrorKind::Unsupported, "speaks 1"))
                };
                let mut w = &s;
                write_line(&mut w, &reply).unwrap();
                if h.hello.protocol == 1 {
                    break;
                }
            }
            seen
        })
    }

    #[test]
    fn a_newer_client_falls_back_to_its_oldest_version_for_an_old_daemon() {
        let dir = std::env::temp_dir().join(format!("ctl-neg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let server = old_daemon(&path);
        let c = Client::connect_speaking(&path, "new", 1..=3).unwrap();
        assert_eq!(c.server().protocol, 1);
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].contains(r#""protocol":3"#), "{seen:?}");
        assert!(seen[1].contains(r#""protocol":1"#), "{seen:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
