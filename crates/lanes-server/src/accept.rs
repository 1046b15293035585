//! The accept loop both front ends share, their listen backlog, and what
//! bounds a gRPC connection.
//!
//! **Rule** (the backlog, [`listen`]): a listener queues up to
//! [`LISTEN_BACKLOG`] connections the kernel has completed and the loop has
//! not yet accepted (Linux caps it at `net.core.somaxconn`). tokio's and the
//! standard library's `bind` queue 128: a client that opens its connections
//! all at once (the lab's load generators, 64 each, several at a time, on a
//! busy host) overflows that, the kernel drops the SYNs past it, and each
//! such client waits a whole SYN retransmission timeout (1 s) to connect.
//!
//! Each open connection of a listener holds one of its `max_connections`
//! slots; the slot is taken before `accept`, so past the bound new
//! connections wait in the kernel's listen backlog until one closes. An
//! accept error (`EMFILE`: out of file descriptors, and the like) backs off
//! [`ACCEPT_BACKOFF`] instead of spinning on a listener that stays readable.
//!
//! hyper bounds a REST connection's head by `header_read_timeout`; HTTP/2
//! (hyper's) has no such timer, so a gRPC [`Connection`] must send HTTP/2's
//! connection preface within it, or its reads fail and the server closes it.
//!
//! **Rule** (giving memory back, [`trim_due`]): the connections open in the
//! process, all listeners together, are counted with their high-water mark.
//! When they fall by at least [`TRIM_MIN_FALL`] and to at most half the mark
//! (a flood of idle connections cut at its deadline, say), a trim is due and
//! the mark restarts from what is open. glibc's malloc keeps what such a
//! flood freed (its arenas are fragmented, so only their tops shrink by
//! themselves); whoever polls [`take_trim_due`] hands it back to the system
//! (`lanes serve`'s log thread calls `malloc_trim(0)`; this workspace forbids
//! `unsafe`, so not from here).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// How long the loop waits after a failed `accept` before trying again.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Completed connections a listener queues before the loop accepts them
/// (the module's backlog rule); nginx's default is 511, Go's somaxconn.
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on the first address `host:port` resolves to, with
/// `SO_REUSEADDR` (as `TcpListener::bind`) and a backlog of
/// [`LISTEN_BACKLOG`].
pub async fn listen(host: &str, port: u16) -> io::Result<TcpListener> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on");
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr) {
            Ok(()) => return socket.listen(LISTEN_BACKLOG),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// HTTP/2's client connection preface: `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
const PREFACE_BYTES: usize = 24;

/// The fewest connections whose closing makes a trim due.
pub const TRIM_MIN_FALL: usize = 1_000;

/// Connections open in this process (every listener), their high-water mark
/// since the last trim was due, and whether one is due.
static OPEN: AtomicUsize = AtomicUsize::new(0);
static HIGH: AtomicUsize = AtomicUsize::new(0);
static TRIM_DUE: AtomicBool = AtomicBool::new(false);

/// Whether `open` connections, down from a high-water mark of `high`, make a
/// trim due (the rule in the module's overview).
pub fn trim_due(high: usize, open: usize) -> bool {
    high.saturating_sub(open) >= TRIM_MIN_FALL && open <= high / 2
}

/// True once after each time a trim became due.
pub fn take_trim_due() -> bool {
    TRIM_DUE.swap(false, Ordering::Relaxed)
}

/// Connections open in this process, all listeners together.
pub fn open_connections() -> usize {
    OPEN.load(Ordering::Relaxed)
}

/// An open connection's place: its listener's slot, and its count in the
/// process's open connections; both given back when dropped.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        let open = OPEN.fetch_add(1, Ordering::Relaxed) + 1;
        HIGH.fetch_max(open, Ordering::Relaxed);
        Self { _permit: permit }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let open = OPEN.fetch_sub(1, Ordering::Relaxed) - 1;
        let high = HIGH.load(Ordering::Relaxed);
        // Racing closes may both see the mark: a trim is due either way.
        if trim_due(high, open) {
            HIGH.store(open, Ordering::Relaxed);
            TRIM_DUE.store(true, Ordering::Relaxed);
        }
    }
}

/// A listener whose open connections are bounded.
#[derive(Debug)]
pub struct Acceptor {
    listener: TcpListener,
    slots: Arc<Semaphore>,
}

impl Acceptor {
    pub fn new(listener: TcpListener, max_connections: usize) -> Self {
        Self {
            listener,
            slots: Arc::new(Semaphore::new(max_connections)),
        }
    }

    /// The next connection (`TCP_NODELAY` set) and its slot, freed when
    /// dropped. Cancel-safe: a dropped call loses no connection.
    pub async fn next(&self) -> (TcpStream, Slot) {
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .expect("never closed");
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return (stream, Slot::new(slot));
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            }
        }
    }
}

/// An accepted gRPC connection: it holds its slot, and until it has sent the
/// HTTP/2 preface its reads fail with `TimedOut` once the deadline passes.
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    _slot: Slot,
    /// The preface's bytes still expected and their deadline; None once sent.
    preface: Option<(usize, Pin<Box<Sleep>>)>,
}

impl Connection {
    pub fn new(stream: TcpStream, slot: Slot, within: Duration) -> Self {
        let deadline = Box::pin(tokio::time::sleep(within));
        Self {
            stream,
            _slot: slot,
            preface: Some((PREFACE_BYTES, deadline)),
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Some((left, deadline)) = &mut this.preface {
            match polled {
                Poll::Ready(Ok(())) => {
                    let got = buf.filled().len() - before;
                    if got >= *left {
                        this.preface = None;
                    } else {
                        *left -= got;
                    }
                }
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no HTTP/2 preface within the header read timeout",
                    )));
                }
                _ => {}
            }
        }
        polled
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn listener() -> (TcpListener, std::net::SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        (listener, address)
    }

    #[tokio::test]
    async fn past_the_bound_a_connection_waits_for_a_slot() {
        let (listener, address) = listener().await;
        let acceptor = Acceptor::new(listener, 1);
        let _first = TcpStream::connect(address).await.unwrap();
        let (_stream, slot) = acceptor.next().await;
        let _second = TcpStream::connect(address).await.unwrap(); // in the backlog
        let next = acceptor.next();
        tokio::pin!(next);
        let waited = tokio::time::timeout(Duration::from_millis(100), next.as_mut()).await;
        assert!(waited.is_err(), "accepted past the bound");
        drop(slot);
        let _second_accepted = next.await; // the slot freed
    }

    /// Opens `n` connections at once to `address`, none accepted: how many
    /// completed their handshake within `within`.
    async fn connected_at_once(address: std::net::SocketAddr, n: usize, within: Duration) -> usize {
        let mut tasks = Vec::with_capacity(n);
        for _ in 0..n {
            tasks.push(tokio::spawn(tokio::time::timeout(
                within,
                TcpStream::connect(address),
            )));
        }
        let mut ok = 0;
        let mut kept = Vec::with_capacity(n); // held open until all are counted
        for t in tasks {
            if let Ok(Ok(Ok(stream))) = t.await {
                ok += 1;
                kept.push(stream);
            }
        }
        ok
    }

    #[tokio::test]
    async fn the_backlog_queues_a_burst_of_connections_before_any_accept() {
        // 300 at once (fewer where net.core.somaxconn caps every backlog
        // lower; Linux's default is 4096 since 5.4): all queue in ours, while
        // tokio's own backlog of 128 drops the SYNs past it, and those
        // clients would wait a 1 s retransmission.
        let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(4096);
        let n = 300.min(somaxconn);
        let within = Duration::from_millis(600);
        let ours = listen("127.0.0.1", 0).await.unwrap();
        let got = connected_at_once(ours.local_addr().unwrap(), n, within).await;
        assert_eq!(got, n);
        if n > 200 {
            let (_tokios, address) = listener().await;
            let got = connected_at_once(address, n, within).await;
            assert!(got < n, "a backlog of 128 queued all {got} of {n}");
        }
    }

    #[test]
    fn a_trim_is_due_after_a_sharp_fall_in_connections() {
        let table = [
            // (high-water mark, open now, due)
            (10_000, 5_001, false), // fell 4,999: more than half still open
            (10_000, 5_000, true),
            (10_000, 0, true),
            (2_001, 1_001, false), // fell 1,000 but not to half
            (2_000, 1_000, true),
            (1_500, 501, false), // half gone, but under TRIM_MIN_FALL closed
            (999, 0, false),
            (0, 0, false),
        ];
        for (high, open, due) in table {
            assert_eq!(trim_due(high, open), due, "{high} -> {open}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_the_preface_in_time_fails_its_reads() {
        let (listener, address) = listener().await;
        let acceptor = Acceptor::new(listener, 4);
        let within = Duration::from_secs(30);

        // silent: the read fails at the deadline
        let _silent = TcpStream::connect(address).await.unwrap();
        let (stream, slot) = acceptor.next().await;
        let mut silent = Connection::new(stream, slot, within);
        let mut buf = [0u8; 64];
        let err = silent.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);

        // the preface sent: no deadline any more
        let mut client = TcpStream::connect(address).await.unwrap();
        let (stream, slot) = acceptor.next().await;
        let mut greeted = Connection::new(stream, slot, within);
        client
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        let mut got = 0;
        while got < PREFACE_BYTES {
            got += greeted.read(&mut buf).await.unwrap();
        }
        assert!(greeted.preface.is_none());
        tokio::time::advance(2 * within).await;
        client.write_all(b"later").await.unwrap();
        assert_eq!(greeted.read(&mut buf).await.unwrap(), 5);
    }
}
