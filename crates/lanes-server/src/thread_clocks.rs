//! A thread's own clocks, read around a call: the CPU it ran and the time it
//! waited for a core.
//!
//! **Rule.** [`Mark::now`] reads the wall clock and two of the calling
//! thread's clocks, and [`Mark::since`] their growth since that mark, as a
//! [`CallClocks`]:
//!
//! - `wall`: the monotonic clock;
//! - `cpu`: the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`), exact at
//!   every read;
//! - `run_delay`: the time the thread was runnable but waiting in the guest's
//!   run queue (the second field of `/proc/thread-self/schedstat`). The kernel
//!   brings it up to date whenever the thread is switched back in, so read by
//!   the running thread itself it is exact as well.
//!
//! A call's wall time is then its CPU, its run delay, and the rest: time the
//! thread was neither running nor waiting for a core of this guest — blocked
//! (a lock, I/O, a GPU it waits on), or, on a virtual machine, *stopped*: the
//! hypervisor ran another guest on the vCPU (that time counts as steal in
//! `/proc/stat`, and neither clock above grows through it; a thread waiting in
//! the run queue meanwhile counts it as run delay). On CPU devices with one
//! intra-op thread, which never block, the rest is the hypervisor's stops,
//! measured call by call.
//!
//! **The order of the reads.** The schedstat and CPU-clock reads are system
//! calls, and the return from one is where a thread that ought to yield its
//! core does so: a wait that begins there is counted in the run delay when the
//! thread is switched back in. So the wall clock is read first and last (the
//! monotonic clock is read without a system call), around the schedstat
//! reads, and those around the CPU clock's: `wall, delay, cpu | call | cpu,
//! wall, delay`. A wait at any system call's return then falls inside both
//! the wall and the run-delay windows, and the rest is not made negative by
//! waits the wall time missed (an earlier order, the schedstat read outside
//! the wall window, counted run delay worth 10 % of the calls' wall time more
//! than the wall time held, under `independent` at 800 req/s); what either
//! window can still miss is a wait begun by an interrupt in the few
//! instructions between a wall read and its neighbouring schedstat read.
//!
//! Each thread opens its schedstat once (a thread-local file, read with
//! `pread` at offset 0, about a microsecond); where it cannot be opened (not
//! Linux, a kernel without schedstats), `run_delay` is `None`, as `cpu` is
//! where the CPU clock cannot be read.

use std::cell::OnceCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use lanes_policy::Nanos;

/// What a call spent, by the wall clock and the thread's own clocks (`None`:
/// not readable here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallClocks {
    /// The wall time from the mark to its [`Mark::since`].
    pub wall: Nanos,
    /// The CPU time the thread ran.
    pub cpu: Option<Nanos>,
    /// The time the thread waited in the run queue for a core.
    pub run_delay: Option<Nanos>,
}

/// The wall clock and the calling thread's clocks at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    wall: Instant,
    cpu: Option<Nanos>,
    run_delay: Option<Nanos>,
}

impl Mark {
    /// Reads the wall clock, the run delay and the CPU clock, in that order
    /// (see the module's rule).
    pub fn now() -> Self {
        let wall = Instant::now();
        let run_delay = run_delay();
        Self {
            wall,
            cpu: thread_cpu(),
            run_delay,
        }
    }

    /// What the clocks grew since `self` (taken on the same thread): the CPU
    /// clock read first, then the wall clock, then the run delay.
    pub fn since(self) -> CallClocks {
        let cpu = thread_cpu();
        let wall = self.wall.elapsed().as_nanos() as Nanos;
        let delay = run_delay();
        let grew = |a: Option<Nanos>, b: Option<Nanos>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        CallClocks {
            wall,
            cpu: grew(self.cpu, cpu),
            run_delay: grew(self.run_delay, delay),
        }
    }
}

/// This thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`), or `None`
/// where the clock cannot be read.
pub fn thread_cpu() -> Option<Nanos> {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(t.tv_sec() as Nanos * 1_000_000_000 + t.tv_nsec() as Nanos)
}

thread_local! {
    /// This thread's schedstat, opened on first use (`None`: cannot be).
    static SCHEDSTAT: OnceCell<Option<File>> = const { OnceCell::new() };
}

/// This thread's time waiting for a core so far, ns (`run_delay` in its
/// schedstat), or `None` where it cannot be read.
pub fn run_delay() -> Option<Nanos> {
    SCHEDSTAT.with(|cell| {
        let file = cell
            .get_or_init(|| File::open("/proc/thread-self/schedstat").ok())
            .as_ref()?;
        let mut buf = [0u8; 96];
        let n = file.read_at(&mut buf, 0).ok()?;
        parse_run_delay(&buf[..n])
    })
}

/// The second field of a schedstat line (`sum_exec_runtime run_delay
/// pcount`).
fn parse_run_delay(line: &[u8]) -> Option<Nanos> {
    std::str::from_utf8(line)
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::{parse_run_delay, thread_cpu, Mark};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn the_thread_clock_counts_work_and_not_sleep() {
        let start = thread_cpu().expect("a thread CPU clock on Linux");
        let wall = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu().unwrap() - start;
        assert!(slept < 10_000_000, "sleeping ran {slept} ns of CPU");
        let mut x = 0u64;
        while thread_cpu().unwrap() - start < slept + 20_000_000 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(wall.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn schedstat_lines_parse_and_bad_ones_do_not() {
        assert_eq!(parse_run_delay(b"123 456 7\n"), Some(456));
        assert_eq!(parse_run_delay(b"123\n"), None);
        assert_eq!(parse_run_delay(b"123 x 7\n"), None);
        assert_eq!(parse_run_delay(b""), None);
    }

    /// Sleeping grows neither clock; sharing one core with a spinning thread
    /// grows the run delay by about what the other thread ran.
    #[test]
    fn the_run_delay_counts_waiting_for_the_core_and_not_sleep() {
        use nix::sched::{sched_setaffinity, CpuSet};
        use nix::unistd::Pid;
        let mark = Mark::now();
        std::thread::sleep(Duration::from_millis(20));
        let slept = mark.since();
        let delay = slept.run_delay.expect("schedstat on Linux");
        assert!(delay < 5_000_000, "sleeping waited {delay} ns for a core");

        // Both threads on one core: each runs about half the wall time.
        let mut one = CpuSet::new();
        let core = nix::sched::sched_getaffinity(Pid::from_raw(0))
            .ok()
            .and_then(|set| (0..CpuSet::count()).find(|&c| set.is_set(c).unwrap_or(false)))
            .unwrap_or(0);
        one.set(core).unwrap();
        sched_setaffinity(Pid::from_raw(0), &one).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let burner = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                sched_setaffinity(Pid::from_raw(0), &one).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let mark = Mark::now();
        let wall = Instant::now();
        while wall.elapsed() < Duration::from_millis(300) {
            std::hint::spin_loop();
        }
        let shared = mark.since();
        stop.store(true, Ordering::Relaxed);
        burner.join().unwrap();
        let (cpu, delay) = (shared.cpu.unwrap(), shared.run_delay.unwrap());
        let wall = shared.wall;
        assert!(
            delay > wall / 5,
            "a core shared with a spinner: waited {delay} ns of {wall} (ran {cpu})"
        );
        // What is left is this guest's stops (steal): never below zero.
        assert!(
            cpu + delay <= wall + 100_000,
            "ran {cpu} + waited {delay} ns, more than the {wall} ns wall"
        );
    }
}
