//! Self-wakes turned into re-polls: a connection future woken *during its
//! own poll* is polled again at once, in the same task poll, instead of
//! being handed back to tokio.
//!
//! **Why.** On tokio's multi-thread runtime a task that wakes itself while
//! it is being polled is rescheduled as a yield: pushed to the back of its
//! worker's run queue, and, since a yield counts as new work, an idle
//! sibling worker is unparked to steal it — a futex wake of a sleeping
//! thread, which finds nothing to steal and parks again. hyper's HTTP/1
//! dispatcher wakes its own task on every request with a body: the
//! handler's first poll of the body sends hyper's "want" signal to the
//! dispatcher, both inside the one connection task. On an idle server every
//! `POST .../infer` paid that wake-up of the other I/O thread on its path
//! (docs/results/serving.md, "A self-woken connection"). A gRPC connection
//! is wrapped too, with its calls on its own task ([`crate::streams`]):
//! their wakes of one another are then its own.
//!
//! **Rule.** [`Repoll`] polls its inner future with a waker of its own. A
//! wake that arrives while the inner poll runs, from any thread, only marks
//! the future for another poll; after the poll, a marked future is polled
//! again, at most [`MAX_REPOLLS`] times in a row — then it yields to tokio
//! as any self-woken task does, so a future that always wakes itself cannot
//! hold its worker. A wake outside a poll goes to the task's waker, as
//! without the wrapper. State: `IDLE → POLLING` at each inner poll;
//! a wake moves `POLLING → WOKEN` (or, seeing `IDLE`, wakes the task);
//! after the poll `POLLING → IDLE` ends it, `WOKEN` polls again.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use atomic_waker::AtomicWaker;

/// Inner polls of one outer poll beyond the first, at most (hyper's own
/// dispatcher loops 16 times before it yields).
pub const MAX_REPOLLS: u32 = 8;

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

/// The wrapper's own waker: where a wake goes depends on whether the inner
/// future is being polled.
#[derive(Debug, Default)]
struct Signal {
    state: AtomicU8,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            match state {
                WOKEN => return,
                POLLING => match self.state.compare_exchange_weak(
                    POLLING,
                    WOKEN,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return,
                    Err(now) => state = now,
                },
                _ => {
                    self.task.wake();
                    return;
                }
            }
        }
    }
}

/// `inner`, with its wakes during its own poll turned into re-polls.
#[derive(Debug)]
pub struct Repoll<F> {
    inner: F,
    signal: Arc<Signal>,
    waker: Waker,
}

impl<F: Future + Unpin> Repoll<F> {
    pub fn new(inner: F) -> Self {
        let signal = Arc::new(Signal::default());
        let waker = Waker::from(Arc::clone(&signal));
        Self {
            inner,
            signal,
            waker,
        }
    }

    /// The wrapped future, to act on it between polls.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.inner
    }
}

impl<F: Future + Unpin> Future for Repoll<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.signal.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(&this.waker);
        for _ in 0..=MAX_REPOLLS {
            this.signal.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = Pin::new(&mut this.inner).poll(&mut inner_cx) {
                this.signal.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            if this
                .signal
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Pending;
            }
        }
        // Still woken after the last re-poll: yield to tokio as before.
        this.signal.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A waker counting its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Wakes itself during each of its first `n` polls, then is ready.
    struct SelfWaking {
        left: u32,
        polls: u32,
    }

    impl Future for SelfWaking {
        type Output = u32;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            self.polls += 1;
            if self.left == 0 {
                return Poll::Ready(self.polls);
            }
            self.left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    fn poll_once<F: Future + Unpin>(f: &mut Repoll<F>, count: &Arc<Count>) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(count));
        Pin::new(f).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn self_wakes_are_polled_again_in_the_same_poll() {
        let count = Arc::new(Count::default());
        let mut f = Repoll::new(SelfWaking { left: 2, polls: 0 });
        assert_eq!(poll_once(&mut f, &count), Poll::Ready(3));
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            0,
            "the task was never woken"
        );
    }

    #[test]
    fn a_future_that_always_wakes_itself_yields_after_the_bound() {
        let count = Arc::new(Count::default());
        let mut f = Repoll::new(SelfWaking {
            left: u32::MAX,
            polls: 0,
        });
        assert_eq!(poll_once(&mut f, &count), Poll::Pending);
        assert_eq!(f.inner.polls, MAX_REPOLLS + 1);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "yielded: woken once");
        assert_eq!(poll_once(&mut f, &count), Poll::Pending);
        assert_eq!(f.inner.polls, 2 * (MAX_REPOLLS + 1));
    }

    #[test]
    fn a_wake_outside_the_poll_wakes_the_latest_task_waker() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let first = Arc::new(Count::default());
        let second = Arc::new(Count::default());
        let mut f = Repoll::new(rx);
        assert!(poll_once(&mut f, &first).is_pending());
        assert!(poll_once(&mut f, &second).is_pending());
        tx.send(7).unwrap();
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll_once(&mut f, &second), Poll::Ready(Ok(7)));
    }

    #[test]
    fn no_wake_is_lost_to_a_race_with_another_thread() {
        // Senders on other threads race the end of each poll; a lost wake
        // would leave a receiver pending forever (the timeout fails it).
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            for i in 0..2_000u32 {
                let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
                let sender = std::thread::spawn(move || {
                    for _ in 0..(i % 7) * 50 {
                        std::hint::spin_loop();
                    }
                    tx.send(i).unwrap();
                });
                let got = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    tokio::spawn(Repoll::new(rx)),
                )
                .await
                .expect("a wake was lost")
                .unwrap();
                assert_eq!(got, Ok(i));
                sender.join().unwrap();
            }
        });
    }
}
