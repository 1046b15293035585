//! Helpers of the prober's integration tests: targets files, loopback
//! listeners and closed ports, and bounded waits on a monitor's messages.
//! Everything is on loopback and every wait has a deadline.

#![allow(dead_code)]

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lanes_probe::sockets::Capabilities;
use lanes_probe::{Event, Message, Monitor, ProbeSpec, Received, RoundReport};

/// Longest any test waits for a message it expects.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// True when syn mode can run; prints why a test is skipped otherwise.
pub fn can_raw(test: &str) -> bool {
    let ok = Capabilities::current().net_raw;
    if !ok {
        eprintln!(
            "{test}: skipped: needs CAP_NET_RAW (raw and packet sockets), which this process lacks"
        );
    }
    ok
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A listener on 127.0.0.1 at any free port.
pub fn listener() -> TcpListener {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap()
}

/// A listener on every IPv4 address (so 127.0.0.x all answer) at any free port.
pub fn wide_listener() -> TcpListener {
    TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap()
}

/// A listener whose accept queue is full, so the kernel drops further SYNs
/// unanswered: a target that is there but silent. Keep the result alive.
pub fn silent_listener() -> (socket2::Socket, std::net::TcpStream) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .unwrap();
    s.listen(0).unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    // One connection fills a zero backlog; it is never accepted.
    let filler = std::net::TcpStream::connect(addr).unwrap();
    (s, filler)
}

/// Writes a targets file (through a rename, as an editor or a deploy would).
pub fn write_targets(path: &Path, lines: &[String]) {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.sync_all().unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A targets file in `dir`.
pub fn targets_file(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("targets.txt");
    write_targets(&path, lines);
    path
}

/// A spec for fast test rounds.
pub fn spec(targets: &Path, mode: lanes_probe::Mode) -> ProbeSpec {
    ProbeSpec {
        targets: targets.to_path_buf(),
        mode,
        interval_s: Some(0.1),
        timeout_s: Some(0.08),
        down_after: Some(2),
        up_after: Some(2),
        ..ProbeSpec::default()
    }
}

/// Everything a monitor said, split by kind.
#[derive(Debug, Default)]
pub struct Log {
    pub events: Vec<Event>,
    pub rounds: Vec<RoundReport>,
    pub notices: Vec<String>,
}

impl Log {
    fn add(&mut self, m: Message) {
        match m {
            Message::Event(e) => self.events.push(e),
            Message::Round(r) => self.rounds.push(r),
            Message::Notice(n) => self.notices.push(format!("{:?}: {}", n.level, n.message)),
        }
    }

    /// Events as `target state<previous` strings, in order.
    pub fn transitions(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| {
                let prev = e.previous.map_or("-".to_string(), |p| p.to_string());
                format!("{} {}<{prev}", e.target, e.state)
            })
            .collect()
    }
}

/// Reads messages into `log` until `done(log)` holds or the run ends; panics
/// after [`DEADLINE`].
pub fn read_until(monitor: &Monitor, log: &mut Log, mut done: impl FnMut(&Log) -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done(log) {
        assert!(Instant::now() < deadline, "timed out; so far: {log:#?}");
        match monitor.recv(Duration::from_millis(100)) {
            Received::Message(m) => log.add(m),
            Received::Empty => {}
            Received::Finished => return,
        }
    }
}

/// Reads every message until the run ends (it must be bounded by `rounds`).
pub fn read_all(monitor: &Monitor) -> Log {
    let mut log = Log::default();
    read_until(monitor, &mut log, |_| false);
    monitor.join().unwrap();
    log
}

/// A listener that can go silent and come back: open, a thread accepts (and
/// drops) every connection; closed, its zero-length accept queue is full, so
/// the kernel drops every SYN unanswered — a service that is there but does
/// not answer, as a hung or overloaded one.
#[derive(Debug)]
pub struct Gate {
    listener: std::sync::Arc<socket2::Socket>,
    pub addr: SocketAddr,
    acceptor: Option<std::thread::JoinHandle<()>>,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    filler: Option<socket2::Socket>,
}

impl Gate {
    /// A gate on 127.0.0.1, open.
    pub fn open_on_loopback() -> Self {
        use socket2::{Domain, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
            .unwrap();
        s.listen(0).unwrap();
        let addr = s.local_addr().unwrap().as_socket().unwrap();
        let mut gate = Self {
            listener: std::sync::Arc::new(s),
            addr,
            acceptor: None,
            open: Default::default(),
            filler: None,
        };
        gate.open();
        gate
    }

    /// Starts accepting again (takes the connection that filled the queue).
    pub fn open(&mut self) {
        use std::sync::atomic::Ordering;
        if let Some(filler) = self.filler.take() {
            // The queue holds one connection (the filler, or a probe's): take it.
            let _ = self.listener.accept().unwrap();
            drop(filler);
        }
        self.open.store(true, Ordering::SeqCst);
        let (listener, open) = (self.listener.clone(), self.open.clone());
        self.acceptor = Some(std::thread::spawn(move || {
            while open.load(Ordering::SeqCst) {
                let _ = listener.accept();
            }
        }));
    }

    /// Stops accepting and fills the queue: SYNs go unanswered from now on.
    pub fn close(&mut self) {
        use std::sync::atomic::Ordering;
        self.open.store(false, Ordering::SeqCst);
        // Wake the acceptor: it takes this connection (or a probe's), sees the
        // flag and ends. A probe may have filled the queue already, and then a
        // blocking connect would wait out its SYN retries (CI once saw it time
        // out): the wake-up is bounded and its failure is no error.
        let _ = std::net::TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        self.acceptor.take().unwrap().join().unwrap();
        // Non-blocking: in connect mode a probe may have filled the queue first,
        // and a blocking connect would then wait out SYN retries.
        let filler =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        filler.set_nonblocking(true).unwrap();
        let _ = filler.connect(&self.addr.into());
        self.filler = Some(filler);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.close();
        }
    }
}
