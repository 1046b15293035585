//! Staying awake between replies (closed loop).
//!
//! A sender thread that has caught up with its server blocks in `epoll_wait`
//! until the next reply comes. Its wake-up is then the *server's* work: on
//! loopback the reply is delivered on the server's CPU, which finds the
//! client asleep and sends its CPU an inter-processor interrupt (in a
//! virtual machine, an exit to the hypervisor). When the server is the
//! bottleneck that cost is taken from its capacity — measured against nginx
//! on two vCPUs: 0.12–0.34 such interrupts per request, and nginx's CPU per
//! request 10–20 % lower once the client stopped sleeping (docs/results/
//! load.md, round 5) — and the load generator under-measures the server it
//! loads.
//!
//! Rule: while replies come close together — their mean gap (an average
//! over about the last [`SMOOTHING`] replies) under a quarter of [`WINDOW_NS`]
//! — the thread goes on polling its event loop without blocking
//! (`epoll_wait` with a zero timeout, through a task that yields) until
//! [`WINDOW_NS`] pass with no reply; only then does it block until the next
//! one. A server that answers within the window never has to wake the client;
//! one that answers more slowly than that is waited for asleep, as before, so
//! polling costs at most one window per pause and never runs against a slow
//! server. Open loop does not spin: its sends wait on the pacer's timer.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// How long a thread keeps polling after its last reply, ns.
pub const WINDOW_NS: u64 = 200_000;
/// Replies over which the mean gap is smoothed (an exponential average).
pub const SMOOTHING: u64 = 8;

/// What the spinning task does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Poll the event loop once more without blocking.
    Poll,
    /// No reply for a whole window, or replies too far apart: block until the next one.
    Sleep,
}

/// The spinner's decision, kept apart from the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    window_ns: u64,
    /// The reply count when last looked at, and when it last moved.
    seen: u64,
    moved_at: u64,
    /// Mean gap between replies, ns.
    mean_gap_ns: u64,
}

impl Window {
    /// A window of `window_ns`, opened at `now` with `replies` seen so far.
    pub fn new(window_ns: u64, replies: u64, now: u64) -> Self {
        Self {
            window_ns,
            seen: replies,
            moved_at: now,
            mean_gap_ns: 0,
        }
    }

    /// The mean gap between replies so far, ns.
    pub fn mean_gap_ns(&self) -> u64 {
        self.mean_gap_ns
    }

    /// Looks at the reply count at `now`. New replies (however many came
    /// since the last look, each taken to have come after an equal share of
    /// the time) move the mean gap and reopen the window.
    pub fn step(&mut self, replies: u64, now: u64) -> Step {
        if replies != self.seen {
            let gap = now.saturating_sub(self.moved_at) / replies.wrapping_sub(self.seen).max(1);
            self.mean_gap_ns = self.mean_gap_ns - self.mean_gap_ns / SMOOTHING + gap / SMOOTHING;
            self.seen = replies;
            self.moved_at = now;
        }
        let close = self.mean_gap_ns < self.window_ns / 4;
        if close && now.saturating_sub(self.moved_at) < self.window_ns {
            Step::Poll
        } else {
            Step::Sleep
        }
    }
}

/// One sender thread's replies, counted by its connection tasks and watched
/// by its spinning task (a single thread: no atomics).
#[derive(Default)]
pub struct Replies {
    count: Cell<u64>,
    sleeper: Cell<Option<Waker>>,
}

impl Replies {
    /// Counts a reply (or failure), waking the spinner if it sleeps.
    pub fn count(&self) {
        self.count.set(self.count.get() + 1);
        if let Some(waker) = self.sleeper.take() {
            waker.wake();
        }
    }

    /// Replies so far.
    pub fn get(&self) -> u64 {
        self.count.get()
    }

    /// Resolves once the count differs from `seen`.
    fn moved_from(&self, seen: u64) -> MovedFrom<'_> {
        MovedFrom {
            replies: self,
            seen,
        }
    }
}

impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replies")
            .field("count", &self.count.get())
            .finish_non_exhaustive()
    }
}

struct MovedFrom<'a> {
    replies: &'a Replies,
    seen: u64,
}

impl Future for MovedFrom<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.replies.get() != self.seen {
            return Poll::Ready(());
        }
        self.replies.sleeper.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

/// Keeps the thread polling while replies come within the window (see the
/// module's rule); `now` reads the run's clock in ns. Never ends by itself:
/// it is dropped with the thread's tasks.
pub async fn spin(replies: &Replies, window_ns: u64, now: impl Fn() -> u64) {
    let mut window = Window::new(window_ns, replies.get(), now());
    loop {
        match window.step(replies.get(), now()) {
            Step::Poll => tokio::task::yield_now().await,
            Step::Sleep => replies.moved_from(replies.get()).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{spin, Replies, Step, Window};
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn the_window_reopens_at_each_close_reply() {
        use Step::{Poll, Sleep};
        // (replies seen, now ns) in turn and the step each gives; window 800 ns
        // from t=0, so replies are close while their mean gap is under 200 ns.
        type Case = (&'static [(u64, u64)], &'static [Step]);
        let cases: [Case; 6] = [
            (&[(0, 0), (0, 799), (0, 800)], &[Poll, Poll, Sleep]),
            // A reply at 700 (gap 700, mean 87) reopens the window until 1500.
            (&[(1, 700), (1, 1499), (1, 1500)], &[Poll, Poll, Sleep]),
            (&[(0, 5000)], &[Sleep]),
            // Many replies at one look share the time since the last one.
            (&[(16, 1600), (16, 2399), (17, 2400)], &[Poll, Poll, Poll]),
            // Replies 1600 ns apart are not close: mean 200 after one of them.
            (&[(1, 1600), (1, 1601)], &[Sleep, Sleep]),
            // Once far apart, it takes close replies to bring the mean down
            // again: gaps 1000, 1000, 10, 10 give means 125, 235, 207, 183.
            (
                &[(1, 1000), (2, 2000), (3, 2010), (4, 2020)],
                &[Poll, Sleep, Sleep, Poll],
            ),
        ];
        for (looks, steps) in cases {
            let mut w = Window::new(800, 0, 0);
            let got: Vec<Step> = looks.iter().map(|&(r, t)| w.step(r, t)).collect();
            assert_eq!(got, steps, "{looks:?} (mean gap {} ns)", w.mean_gap_ns());
        }
    }

    #[test]
    fn the_spinner_polls_sleeps_and_wakes_on_a_reply() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let replies = Rc::new(Replies::default());
            // A virtual clock: each look at it is 10 ns later; window 50 ns.
            let clock = Rc::new(Cell::new(0u64));
            let looks = Rc::new(Cell::new(0u32));
            let spinner = {
                let (replies, clock, looks) = (replies.clone(), clock.clone(), looks.clone());
                tokio::task::spawn_local(async move {
                    spin(&replies, 50, || {
                        looks.set(looks.get() + 1);
                        clock.set(clock.get() + 10);
                        clock.get()
                    })
                    .await
                })
            };
            // Let it run until it sleeps: a bounded number of looks, then none.
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            let asleep_at = looks.get();
            assert!((5..=7).contains(&asleep_at), "looked {asleep_at} times");
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            assert_eq!(looks.get(), asleep_at, "a sleeping spinner does not poll");
            // A reply wakes it and it polls again, then sleeps again.
            replies.count();
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            assert!(looks.get() > asleep_at + 4, "looked {} times", looks.get());
            spinner.abort();
        });
    }
}
