//! An HTTP/2 connection whose streams run in the connection's own task.
//!
//! hyper's HTTP/2 server hands every stream (one gRPC call) to its executor.
//! With tokio's, each call is a task of its own: it is spawned, it wakes the
//! connection's task to send its response, and the connection wakes it back —
//! cross-task hops, often across threads, that a REST request on HTTP/1.1
//! (served inside its connection's task) never pays. Here the executor is
//! the connection's task itself: [`Streams`] collects the futures hyper hands
//! it, and [`Served`] polls them beside the connection.
//!
//! **Rule** (one poll of [`Served`]): poll the connection (it reads frames,
//! accepts streams into [`Streams`], writes what is queued), then every
//! stream future that is ready; repeat while the connection accepted a
//! stream or a stream finished (its response waits to be written) — at most
//! [`ROUNDS`] times, then yield to the runtime with the task woken, so a busy
//! connection cannot starve others. A stream that wakes itself is polled
//! again in the next poll, as a task would be. When the connection ends, streams still pending are
//! dropped (their calls are cancelled, as a reset stream's are).
//!
//! A connection's calls thus share one thread at a time: their decoding and
//! encoding are serialised, as HTTP/1.1's are. The models run elsewhere
//! (executor threads), so on a host with fewer cores than connections this
//! costs nothing; a single connection carrying large tensors is bounded by
//! one core's codec.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::task::AtomicWaker;

/// The most connection-and-streams rounds one poll runs before yielding.
pub const ROUNDS: usize = 16;

type StreamFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

#[derive(Default)]
struct Shared {
    pending: Mutex<FuturesUnordered<StreamFuture>>,
    /// Set by [`Streams::execute`]; cleared by each round.
    added: AtomicBool,
    /// True while [`Served`] is being polled (no wake needed then).
    polling: AtomicBool,
    waker: AtomicWaker,
}

/// hyper's executor for one connection: keeps the streams for [`Served`].
#[derive(Clone, Default)]
pub struct Streams {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pending = self.shared.pending.lock().map(|p| p.len()).unwrap_or(0);
        f.debug_struct("Streams")
            .field("pending", &pending)
            .finish()
    }
}

impl<F> hyper::rt::Executor<F> for Streams
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        let shared = &self.shared;
        shared
            .pending
            .lock()
            .expect("stream set poisoned")
            .push(Box::pin(future));
        shared.added.store(true, Ordering::Release);
        // hyper accepts streams while `Served` polls the connection; from
        // anywhere else the task must be woken to poll the new one.
        if !shared.polling.load(Ordering::Acquire) {
            shared.waker.wake();
        }
    }
}

/// A connection future served with its [`Streams`]: resolves with the
/// connection's output.
pub struct Served<C> {
    connection: Pin<Box<C>>,
    streams: Streams,
}

impl<C> std::fmt::Debug for Served<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("streams", &self.streams)
            .finish()
    }
}

impl<C: Future> Served<C> {
    pub fn new(connection: C, streams: Streams) -> Self {
        Self {
            connection: Box::pin(connection),
            streams,
        }
    }

    /// The connection itself (for `graceful_shutdown`).
    pub fn connection(&mut self) -> Pin<&mut C> {
        self.connection.as_mut()
    }

    /// Polls every ready stream; whether any finished.
    fn poll_streams(&self, cx: &mut Context<'_>) -> bool {
        let mut pending = self
            .streams
            .shared
            .pending
            .lock()
            .expect("stream set poisoned");
        let mut finished = false;
        while let Poll::Ready(Some(())) = pending.poll_next_unpin(cx) {
            finished = true;
        }
        finished
    }
}

impl<C: Future> Future for Served<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = self.get_mut();
        let shared = Arc::clone(&this.streams.shared);
        shared.waker.register(cx.waker());
        shared.polling.store(true, Ordering::Release);
        let mut answer = Poll::Pending;
        let mut rounds_left = ROUNDS;
        loop {
            shared.added.store(false, Ordering::Release);
            if let Poll::Ready(output) = this.connection.as_mut().poll(cx) {
                answer = Poll::Ready(output);
                break;
            }
            let finished = this.poll_streams(cx);
            if !finished && !shared.added.load(Ordering::Acquire) {
                break; // everything waits on something else
            }
            rounds_left -= 1;
            if rounds_left == 0 {
                cx.waker().wake_by_ref(); // come back after the other tasks
                break;
            }
        }
        shared.polling.store(false, Ordering::Release);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Executor;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Wake, Waker};

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection stand-in: hands `spawn` streams to the executor on its
    /// first poll (on every poll when `every`), each done after `yields`
    /// polls (waking itself meanwhile), and ends once `stop` is set.
    struct Fake {
        streams: Streams,
        spawn: usize,
        every: bool,
        yields: usize,
        done: Arc<AtomicUsize>,
        stop: Arc<AtomicBool>,
    }

    impl Future for Fake {
        type Output = &'static str;
        fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<&'static str> {
            let spawn = if self.every {
                self.spawn
            } else {
                std::mem::take(&mut self.spawn)
            };
            for _ in 0..spawn {
                let done = Arc::clone(&self.done);
                let mut left = self.yields;
                self.streams.execute(std::future::poll_fn(move |cx| {
                    if left == 0 {
                        done.fetch_add(1, Ordering::Relaxed);
                        return Poll::Ready(());
                    }
                    left -= 1;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }));
            }
            if self.stop.load(Ordering::Relaxed) {
                Poll::Ready("closed")
            } else {
                Poll::Pending
            }
        }
    }

    /// `fake` served with its streams, and a counting waker's context parts.
    fn serve(fake: Fake) -> (Served<Fake>, Arc<Count>, Waker) {
        let streams = fake.streams.clone();
        let count = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&count));
        (Served::new(fake, streams), count, waker)
    }

    #[test]
    fn streams_run_in_the_connections_poll_and_end_with_it() {
        let streams = Streams::default();
        let (done, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let fake = Fake {
            streams: streams.clone(),
            spawn: 5,
            every: false,
            yields: 0,
            done: Arc::clone(&done),
            stop: Arc::clone(&stop),
        };
        let (mut served, count, waker) = serve(fake);
        let mut cx = Context::from_waker(&waker);
        // The streams accepted during a poll are polled in that same poll.
        assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
        assert_eq!(done.load(Ordering::Relaxed), 5);
        assert_eq!(
            count.0.load(Ordering::Relaxed),
            0,
            "nothing left to come back for"
        );
        // A stream handed over outside a poll wakes the task once.
        let ran = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&ran);
        streams.execute(async move {
            seen.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
        assert_eq!(ran.load(Ordering::Relaxed), 1);
        // Streams still pending when the connection ends are dropped with it.
        streams.execute(std::future::pending());
        stop.store(true, Ordering::Relaxed);
        assert_eq!(Pin::new(&mut served).poll(&mut cx), Poll::Ready("closed"));
        drop(served);
        assert_eq!(
            Arc::strong_count(&streams.shared),
            1,
            "nothing holds the set"
        );
    }

    #[test]
    fn a_stream_that_wakes_itself_is_polled_again_later() {
        let streams = Streams::default();
        let done = Arc::new(AtomicUsize::new(0));
        let fake = Fake {
            streams: streams.clone(),
            spawn: 3,
            every: false,
            yields: 2,
            done: Arc::clone(&done),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (mut served, count, waker) = serve(fake);
        let mut cx = Context::from_waker(&waker);
        let mut polls = 0;
        while done.load(Ordering::Relaxed) < 3 {
            assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
            polls += 1;
            assert!(polls <= 3, "each poll moves every woken stream");
        }
        assert!(count.0.load(Ordering::Relaxed) >= 1);
    }

    #[test]
    fn a_connection_that_keeps_accepting_yields_after_its_rounds() {
        let streams = Streams::default();
        let done = Arc::new(AtomicUsize::new(0));
        let fake = Fake {
            streams: streams.clone(),
            spawn: 1,
            every: true, // a stream accepted (and finished) every round
            yields: 0,
            done: Arc::clone(&done),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (mut served, count, waker) = serve(fake);
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
        assert_eq!(done.load(Ordering::Relaxed), ROUNDS);
        assert_eq!(count.0.load(Ordering::Relaxed), 1, "woken to come back");
    }
}
