//! A gRPC connection's calls run on the connection's own task.
//!
//! **Why.** hyper's HTTP/2 server hands each stream (one gRPC call) to its
//! executor, which with tokio spawns a task per call. A call is then a chain
//! of wakes between tasks — the connection reads the call and wakes its
//! stream task, the stream submits to the driver task, the driver's reply
//! wakes the stream, the stream's response wakes the connection to write it —
//! and tokio keeps such a chain on one thread only for 3 polls of its LIFO
//! slot per tick: the fourth goes to the run queue and unparks an idle worker,
//! and the two threads then contend for h2's lock on the connection's streams
//! (docs/results/serving.md, "A self-woken connection").
//!
//! **Rule.** Each connection gets its own [`Streams`] executor. It does not
//! spawn: `execute` queues the stream's future and wakes the connection's
//! task. [`WithStreams`] is that task's future: each poll it polls the HTTP/2
//! connection, then moves the queued streams into its set and polls every
//! stream that was woken, until none is ready. A wake between the connection
//! and its streams is then a wake of the task by itself, which [`Repoll`]
//! turns into a poll in place. When the HTTP/2 connection ends it is dropped
//! at once (its socket and connection slot freed, h2 telling its streams the
//! connection is gone); the task ends when no stream is left (a graceful
//! shutdown lets the calls in flight finish first). One connection's calls share one thread at a time, as its
//! framing already did; calls of other connections run beside them.
//!
//! [`Repoll`]: crate::repoll::Repoll

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;
use futures_util::stream::{FuturesUnordered, StreamExt};

type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What [`Streams`] and [`WithStreams`] share: the streams hyper handed over
/// since the last poll, and the connection task's waker.
#[derive(Default)]
struct Handed {
    queue: Mutex<Vec<Call>>,
    task: AtomicWaker,
}

/// One connection's executor for hyper's HTTP/2 streams (cheap to clone).
#[derive(Clone, Default)]
pub struct Streams {
    handed: Arc<Handed>,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams").finish_non_exhaustive()
    }
}

impl<F> hyper::rt::Executor<F> for Streams
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, call: F) {
        self.handed
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::pin(call));
        self.handed.task.wake();
    }
}

impl<C: Future> std::fmt::Debug for WithStreams<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithStreams")
            .field("done", &self.done.is_some())
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

/// A connection future and the streams its [`Streams`] executor was handed.
pub struct WithStreams<C: Future> {
    /// The connection, until it ends.
    connection: Option<C>,
    /// The connection's output, once it has one.
    done: Option<C::Output>,
    calls: FuturesUnordered<Call>,
    handed: Arc<Handed>,
}

impl<C: Future + Unpin> WithStreams<C> {
    /// `connection`, served with `streams` as its executor.
    pub fn new(connection: C, streams: &Streams) -> Self {
        Self {
            connection: Some(connection),
            done: None,
            calls: FuturesUnordered::new(),
            handed: Arc::clone(&streams.handed),
        }
    }

    /// The connection future, to act on it between polls (None once it
    /// ended).
    pub fn connection(&mut self) -> Option<&mut C> {
        self.connection.as_mut()
    }
}

impl<C: Future + Unpin> Future for WithStreams<C>
where
    C::Output: Unpin,
{
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = self.get_mut();
        this.handed.task.register(cx.waker());
        if let Some(connection) = &mut this.connection {
            if let Poll::Ready(out) = Pin::new(connection).poll(cx) {
                this.done = Some(out);
                this.connection = None;
            }
        }
        loop {
            let handed =
                std::mem::take(&mut *this.handed.queue.lock().unwrap_or_else(|e| e.into_inner()));
            this.calls.extend(handed);
            match this.calls.poll_next_unpin(cx) {
                Poll::Ready(Some(())) => continue,
                Poll::Ready(None) if this.done.is_some() => {
                    return Poll::Ready(this.done.take().expect("checked"));
                }
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Executor;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    /// Polls `f` once with the current task's waker.
    async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
    }

    #[tokio::test]
    async fn handed_calls_run_on_the_connection_task_and_it_ends_after_them() {
        let streams = Streams::default();
        let (open_tx, open_rx) = tokio::sync::oneshot::channel::<()>();
        let (reply_tx, reply_rx) = tokio::sync::oneshot::channel::<u32>();
        let (seen_tx, seen_rx) = tokio::sync::oneshot::channel::<u32>();
        // The "connection" hands one call to the executor, then ends when
        // told; what it owns (its socket) is seen to go by `owned_rx`.
        let (owned, mut owned_rx) = tokio::sync::oneshot::channel::<()>();
        let exec = streams.clone();
        let connection = Box::pin(async move {
            let _socket = owned;
            exec.execute(async move {
                let got = reply_rx.await.unwrap();
                seen_tx.send(got).unwrap();
            });
            open_rx.await.unwrap();
        });
        let mut served = WithStreams::new(connection, &streams);
        assert!(poll_once(&mut served).await.is_pending());
        assert_eq!(served.calls.len(), 1);
        open_tx.send(()).unwrap();
        // The connection is done but a call is in flight: not ready yet, and
        // the connection is dropped already, not held until the call ends.
        assert!(poll_once(&mut served).await.is_pending());
        assert!(served.connection().is_none());
        assert_eq!(
            owned_rx.try_recv(),
            Err(tokio::sync::oneshot::error::TryRecvError::Closed)
        );
        assert_eq!(served.calls.len(), 1);
        reply_tx.send(7).unwrap();
        assert!(poll_once(&mut served).await.is_ready());
        assert_eq!(seen_rx.await.unwrap(), 7);
    }

    /// A waker counting its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_call_handed_from_another_thread_wakes_the_connection_task() {
        let streams = Streams::default();
        let mut served = WithStreams::new(Box::pin(std::future::pending::<()>()), &streams);
        let count = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
        let exec = streams.clone();
        let (tx, mut rx) = tokio::sync::oneshot::channel::<u32>();
        std::thread::spawn(move || exec.execute(async move { tx.send(3).unwrap() }))
            .join()
            .unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "handing woke the task");
        assert!(Pin::new(&mut served).poll(&mut cx).is_pending());
        assert_eq!(
            served.calls.len(),
            0,
            "the call ran to its end in that poll"
        );
        assert_eq!(rx.try_recv(), Ok(3));
    }
}
