//! `fwdctl`: operate the forwarding appliance over its unix socket.
//!
//! clap handles the global options; the command itself (`route add ...`)
//! goes to `ctl::text`, the one keyword parser that batch files and saved
//! configurations use too, so a line means the same everywhere.
//!
//! Exit status: 0 success; 1 the daemon refused the request, or the socket
//! failed; 2 usage error (bad command line or batch file: nothing was sent).

use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ctl::codec::BatchEncoder;
use ctl::text::{for_each_change, parse_command, usage, Command};
use ctl::wire::{ErrorBody, Item, Request, Response};
use ctl::{Client, ClientError};

// Beside the binary's root, in its own directory (a file directly in
// src/bin/ would be taken for another binary).
#[path = "fwdctl/idle.rs"]
mod idle;
#[path = "fwdctl/output.rs"]
mod output;
#[path = "fwdctl/table.rs"]
mod table;

const DEFAULT_SOCKET: &str = "/run/fwd/fwd.sock";

#[derive(Parser, Debug)]
#[command(
    name = "fwdctl",
    version,
    about = "Operate the fwd forwarding appliance",
    override_usage = "fwdctl [OPTIONS] OBJECT [VERB] [ARGS...]\n       fwdctl [OPTIONS] -b FILE",
    after_help = ctl::text::USAGE
)]
struct Cli {
    /// Daemon socket [env: FWD_SOCKET] [default: /run/fwd/fwd.sock]
    #[arg(short = 's', long = "socket", value_name = "PATH")]
    socket: Option<PathBuf>,

    /// Print the daemon's answers as JSON (a dump prints one JSON array)
    #[arg(short = 'j', long)]
    json: bool,

    /// Apply FILE ('-' for stdin) as one batch: one generation, or nothing
    #[arg(short = 'b', long = "batch", value_name = "FILE")]
    batch: Option<String>,

    /// The command, e.g. `route add 10.0.0.0/8 via 10.0.1.2 dev p1`
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<String>,
}

/// `fwdctl completion bash|zsh`: the shell completion script on stdout.
fn completion(args: &[&str]) -> Result<(), Failure> {
    use clap_complete::Shell;
    let shell = match args {
        ["bash"] => Shell::Bash,
        ["zsh"] => Shell::Zsh,
        _ => return Err(Failure::Usage("usage: fwdctl completion bash|zsh".into())),
    };
    let mut cmd = completion_command();
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "fwdctl", &mut out);
    out.flush()?;
    Ok(())
}

/// The command line as the shells should see it: the global options, then
/// every object of the language with its verbs and keywords
/// (`ctl::text::grammar`, the table the parser checks verbs against).
fn completion_command() -> clap::Command {
    use clap::builder::PossibleValuesParser;
    use clap::{Arg, CommandFactory};
    let words = |keywords: &'static [&'static str]| {
        Arg::new("words")
            .num_args(0..)
            .trailing_var_arg(true)
            .value_parser(PossibleValuesParser::new(keywords))
    };
    let mut cmd = Cli::command()
        .mut_arg("command", |a| a.hide(true))
        .args_conflicts_with_subcommands(true)
        .disable_help_subcommand(true);
    for o in ctl::text::grammar::OBJECTS {
        let mut sub = clap::Command::new(o.name).disable_help_subcommand(true);
        if o.verbs.is_empty() {
            sub = sub.arg(words(o.keywords));
        }
        for v in o.verbs {
            sub = sub.subcommand(clap::Command::new(*v).arg(words(o.keywords)));
        }
        cmd = cmd.subcommand(sub);
    }
    let topics: Vec<&'static str> = ctl::text::grammar::OBJECTS.iter().map(|o| o.name).collect();
    cmd.subcommand(clap::Command::new("help").arg(words(topics.leak())))
        .subcommand(
            clap::Command::new("completion").arg(Arg::new("shell").value_parser(["bash", "zsh"])),
        )
}

/// How `fwdctl` failed, which decides the exit status.
enum Failure {
    /// Bad command line or batch file; nothing was sent. Exit 2.
    Usage(String),
    /// The daemon refused, or the socket failed. Exit 1.
    Failed(anyhow::Error),
    /// Stdout closed under us (`fwdctl route show | head`): stop quietly.
    BrokenPipe,
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Failed(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Failed(e.into())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("fwdctl: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(e)) => {
            eprintln!("fwdctl: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    let socket = cli
        .socket
        .or_else(|| std::env::var_os("FWD_SOCKET").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET));
    // `--json` is accepted after the command too (`fwdctl route show --json`).
    let mut json = cli.json;
    let mut help = false;
    let words: Vec<&str> = cli
        .command
        .iter()
        .map(String::as_str)
        .filter(|w| match *w {
            "--json" => {
                json = true;
                false
            }
            "--help" | "-h" => {
                help = true;
                false
            }
            _ => true,
        })
        .collect();

    if let Some(file) = &cli.batch {
        if !words.is_empty() {
            return Err(Failure::Usage(format!(
                "-b takes no command (got '{}')",
                words.join(" ")
            )));
        }
        return batch(file, &socket, json);
    }
    if help {
        return print_help(words.first().copied());
    }
    if words.is_empty() {
        return Err(Failure::Usage(
            "missing command; try 'fwdctl --help'".into(),
        ));
    }
    if words[0] == "completion" {
        return completion(&words[1..]);
    }
    if let Some(opt) = words.first().filter(|w| w.starts_with('-')) {
        return Err(Failure::Usage(format!(
            "unknown option '{opt}'; try 'fwdctl --help'"
        )));
    }
    let mut req = match parse_command(&words) {
        Ok(Command::Request(r)) => r,
        Ok(Command::Help(topic)) => return print_help(topic.as_deref()),
        Ok(Command::Capture { request, file }) => return capture(&socket, &request, &file),
        Err(e) => return Err(Failure::Usage(e.to_string())),
    };
    if let Request::ConfigSave { path } = &mut req {
        // A bare file name goes to the daemon's save_dir; another relative
        // path means ours (and the daemon writes only root's there).
        let p = Path::new(path.as_str());
        if p.is_relative() && p.components().count() > 1 {
            let cwd = std::env::current_dir().context("config save: current directory")?;
            *path = cwd.join(p).to_string_lossy().into_owned();
        }
    }
    let what = words.iter().take(2).copied().collect::<Vec<_>>().join(" ");
    let mut client = connect(&socket)?;
    let stdout = io::stdout().lock();
    let out = io::BufWriter::with_capacity(256 * 1024, stdout);
    if req.is_stream() {
        // A bulk read: it waits for the appliance, never the other way.
        idle::give_way();
        let mut printer = output::StreamOut::new(out, &req, json);
        let mut failed: Option<io::Error> = None;
        let result = client.call_stream(&req, |item| match printer.item(&item) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        match result {
            Ok(_) => printer.finish()?,
            Err(e) => {
                // Print what arrived before the error, then the error.
                printer.finish()?;
                return Err(server_failure(&what, e, json));
            }
        }
    } else {
        match client.call(&req) {
            Ok(Response::Done(d)) if !json => {
                let mut out = out;
                output::done(&mut out, &d, None)?;
                out.flush()?;
            }
            Ok(r) => output::response(out, &r, json)?,
            Err(e) => return Err(server_failure(&what, e, json)),
        }
    }
    Ok(())
}

/// `capture ... -w FILE`: the daemon streams the pcap file's bytes, which
/// are written here, as the user running fwdctl (`-` for stdout); the
/// summary goes to stderr.
fn capture(socket: &Path, req: &Request, file: &str) -> Result<(), Failure> {
    let mut out: Box<dyn Write> = if file == "-" {
        Box::new(io::BufWriter::new(io::stdout().lock()))
    } else {
        let f = std::fs::File::create(file)
            .with_context(|| format!("capture: cannot create {file}"))?;
        Box::new(io::BufWriter::new(f))
    };
    let mut client = connect(socket)?;
    let mut failed: Option<anyhow::Error> = None;
    let mut summary = None;
    let result = client.call_stream(req, |item| {
        let r = match item {
            Item::Pcap(c) => match c.bytes() {
                Some(b) => out
                    .write_all(&b)
                    .and_then(|()| out.flush())
                    .map_err(Into::into),
                None => Err(anyhow::anyhow!("capture: the daemon sent bad pcap bytes")),
            },
            Item::CaptureSummary(s) => {
                summary = Some(s);
                Ok(())
            }
            _ => Ok(()),
        };
        match r {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    if let Some(e) = failed {
        return Err(Failure::Failed(e));
    }
    out.flush()?;
    if let Err(e) = result {
        return Err(server_failure("capture", e, false));
    }
    if let Some(s) = summary {
        eprintln!(
            "fwdctl: {} packets captured; not captured: {} (ring full), {} (over the rate)",
            s.captured, s.ring_full, s.rate_limited
        );
    }
    Ok(())
}

fn print_help(topic: Option<&str>) -> Result<(), Failure> {
    match usage(topic) {
        Some(text) => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
        None => Err(Failure::Usage(format!(
            "no help on '{}'; try 'fwdctl help'",
            topic.unwrap_or("")
        ))),
    }
}

fn connect(socket: &Path) -> Result<Client, Failure> {
    Client::connect(socket).map_err(|e| match e {
        ClientError::Io(e) => Failure::Failed(anyhow::anyhow!(
            "cannot reach the daemon at {}: {e} (is fwd running? see --socket / FWD_SOCKET)",
            socket.display()
        )),
        other => Failure::Failed(anyhow::anyhow!(
            "daemon at {} refused the connection: {other}",
            socket.display()
        )),
    })
}

/// A failed call. With `--json` a daemon error is also printed to stderr as
/// `{"error":{...}}`.
fn server_failure(what: &str, e: ClientError, json: bool) -> Failure {
    match e {
        ClientError::Server(body) => {
            if json {
                print_json_error(&body);
            }
            Failure::Failed(anyhow::anyhow!("{what}: {body}"))
        }
        other => Failure::Failed(anyhow::anyhow!("{what}: {other}")),
    }
}

fn print_json_error(body: &ErrorBody) {
    #[derive(serde::Serialize)]
    struct E<'a> {
        error: &'a ErrorBody,
    }
    if let Ok(s) = ctl::encode(&E { error: body }) {
        eprintln!("{s}");
    }
}

/// `-b FILE`: parse every line first (nothing is sent if one is bad), then
/// send one batch and name the file line of a change the daemon rejects.
fn batch(file: &str, socket: &Path, json: bool) -> Result<(), Failure> {
    let name = if file == "-" { "<stdin>" } else { file };
    let mut data = Vec::new();
    let read = if file == "-" {
        io::stdin().lock().read_to_end(&mut data).map(drop)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut data).map(drop))
    };
    read.map_err(|e| Failure::Usage(format!("cannot read batch file {name}: {e}")))?;
    let text = String::from_utf8(data).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Failure::Usage(format!("{name}: line {line}: not valid UTF-8"))
    })?;
    // Encode each change as it is parsed (no million-element Vec<Change>);
    // a bad line anywhere still means nothing is sent.
    let mut enc = BatchEncoder::with_capacity(text.len() / 2 * 5);
    let mut lines = Vec::with_capacity(text.len() / 40);
    let mut encode_error = None;
    for_each_change(&text, |line, c| {
        if let Err(e) = enc.push(&c) {
            encode_error.get_or_insert(e);
        }
        lines.push(line);
    })
    .map_err(|e| Failure::Usage(format!("{name}: {e}")))?;
    if let Some(e) = encode_error {
        return Err(Failure::Failed(anyhow::anyhow!(
            "{name}: cannot encode: {e}"
        )));
    }
    if enc.is_empty() {
        eprintln!("fwdctl: {name}: no changes; nothing sent");
        return Ok(());
    }
    let req = enc.finish();
    let mut client = connect(socket)?;
    match client.call_encoded(&req) {
        Ok(Response::Done(d)) => {
            let mut out = io::stdout().lock();
            if json {
                output::response(&mut out, &Response::Done(d), true)?;
            } else {
                output::done(&mut out, &d, Some(name))?;
                out.flush()?;
            }
            Ok(())
        }
        Ok(other) => Err(Failure::Failed(anyhow::anyhow!(
            "{name}: unexpected answer to a batch: {other:?}"
        ))),
        Err(ClientError::Server(body)) => {
            if json {
                print_json_error(&body);
            }
            let line = body
                .index
                .and_then(|i| usize::try_from(i).ok()?.checked_sub(1))
                .and_then(|i| lines.get(i).copied());
            let body_text = format!("{}: {}", body.kind, body.message);
            Err(Failure::Failed(match line {
                Some(l) => {
                    let src = text.lines().nth(l - 1).unwrap_or("").trim();
                    anyhow::anyhow!("{name}: line {l}: {body_text}\n  {l} | {src}\nnothing was applied")
                }
                None => anyhow::anyhow!("{name}: {body_text}\nnothing was applied"),
            }))
        }
        Err(e) => Err(Failure::Failed(anyhow::anyhow!(
            "{name}: {e}; the outcome is unknown (a batch applies whole or not at all: check with a show command)"
        ))),
    }
}
