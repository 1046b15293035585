//! Device executors: the threads that run batches.
//!
//! **Rule.** A device gets as many executor threads as jobs it may run at
//! once (one under `fifo`/`sjf`/`fair`, K under `limit:K`, plus the fast slot
//! under `lanes`; under `independent` the sum of its models'
//! `num_batch_threads`), all taking work from the device's one channel. So
//! the serving state alone decides what overlaps: an executor is always free
//! when the state starts a batch on its device.
//!
//! An executor runs the batch through the [`Backend`], catching a panic as a
//! model failure, adds the batch to its model's statistics
//! ([`crate::observe`]), and hands the batch's answers to the driver with its
//! measured run time, the CPU time its thread spent in the call, and whether
//! the model failed (a failure is not learnt as a cost, but shows in the
//! timeline); the driver records the job in the
//! device accounts and the timeline, then answers, so a client that reads
//! them after its answer sees its batch. [`run_batch`] is that work, shared
//! with the driver, which runs a tiny batch itself (its inline rule).
//!
//! **A call's clocks.** The wall clock and the thread's own clocks
//! ([`crate::thread_clocks`]) are read before and after the runtime call: its
//! run time (the wall time between the reads), the CPU the call ran on that
//! thread, and the time it waited in the run queue for a core. Its wall time
//! less both is the time it was blocked or (on a virtual machine) stopped by
//! the hypervisor — on CPU devices with one intra-op thread, which never
//! block, the stops. A runtime that computes on threads of its own (several
//! intra-op threads, a GPU) shows only the calling thread's part.
//!
//! **Calls on every executor.** [`Executors::call_each`] runs a function
//! once on each executor thread of a device (warm-up, so that what an engine
//! keeps per thread — CUDA libraries' handles — is made before the first
//! request): one job per thread, each waiting at a barrier of that many once
//! done, so no thread can take two.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use lanes_policy::{JobId, Nanos};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, BatchInfo};
use crate::driver::{Answered, Command, Reply};
use crate::error::ServerError;
use crate::observe::Observer;
use crate::thread_clocks::{CallClocks, Mark};

/// One request inside a batch: its input and where its answer goes.
pub(crate) struct Item<B: Backend> {
    pub input: B::Input,
    pub reply: oneshot::Sender<Result<Reply<B::Output>, ServerError>>,
    /// Nanoseconds it waited between arrival and the batch's start.
    pub queued: Nanos,
}

/// A batch for a device's executors.
pub(crate) struct Work<B: Backend> {
    pub info: BatchInfo,
    pub model_name: Arc<str>,
    pub items: Vec<Item<B>>,
}

/// A function to run on executor threads ([`Executors::call_each`]).
pub(crate) type Call = Arc<dyn Fn() + Send + Sync>;

/// What an executor thread takes from its device's channel.
pub(crate) enum Job<B: Backend> {
    Batch(Work<B>),
    /// Run the call, then wait at the barrier.
    Call(Call, Arc<Barrier>),
}

/// The executor threads of every device.
pub(crate) struct Executors<B: Backend> {
    /// Per device, its work channel (dropped to stop its threads).
    queues: Vec<flume::Sender<Job<B>>>,
    /// Per device, its executor threads.
    slots: Vec<usize>,
    threads: Vec<JoinHandle<()>>,
}

impl<B: Backend> std::fmt::Debug for Executors<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executors")
            .field("devices", &self.queues.len())
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl<B: Backend> Executors<B> {
    /// Starts `slots[d]` executor threads for every device `d`.
    pub fn start(
        slots: &[u32],
        backend: &Arc<B>,
        done: &mpsc::UnboundedSender<Command<B>>,
        observer: &Arc<Observer>,
    ) -> std::io::Result<Self> {
        let mut queues = Vec::with_capacity(slots.len());
        let mut threads = Vec::new();
        for (device, &n) in slots.iter().enumerate() {
            let (tx, rx) = flume::unbounded::<Job<B>>();
            for slot in 0..n.max(1) {
                let (rx, backend, done) = (rx.clone(), Arc::clone(backend), done.clone());
                let observer = Arc::clone(observer);
                let thread = std::thread::Builder::new()
                    .name(format!("lanes-device-{device}.{slot}"))
                    .spawn(move || executor(&rx, &*backend, &done, &observer))?;
                threads.push(thread);
            }
            queues.push(tx);
        }
        let slots = slots.iter().map(|&n| n.max(1) as usize).collect();
        Ok(Self {
            queues,
            slots,
            threads,
        })
    }

    /// Hands `work` to its device.
    pub fn submit(&self, work: Work<B>) {
        let device = work.info.device;
        if let Err(flume::SendError(Job::Batch(work))) = self.queues[device].send(Job::Batch(work))
        {
            // Only after stop(): answer rather than lose the requests.
            for item in work.items {
                let _ = item.reply.send(Err(ServerError::ShuttingDown));
            }
        }
    }

    /// Runs `call` once on each executor thread of `device` (see the module
    /// docs); returns how many threads will run it (0: no such device, or
    /// stopped).
    pub fn call_each(&self, device: usize, call: &Call) -> usize {
        let (Some(queue), Some(&n)) = (self.queues.get(device), self.slots.get(device)) else {
            return 0;
        };
        let barrier = Arc::new(Barrier::new(n));
        for _ in 0..n {
            // A channel closes for all its sends at once: all or none go.
            if queue
                .send(Job::Call(Arc::clone(call), Arc::clone(&barrier)))
                .is_err()
            {
                return 0;
            }
        }
        n
    }

    /// Closes every device's channel and waits for its executors to finish
    /// the work they hold.
    pub fn stop(&mut self) {
        self.queues.clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// One executor thread: run batches until the device's channel closes.
fn executor<B: Backend>(
    jobs: &flume::Receiver<Job<B>>,
    backend: &B,
    done: &mpsc::UnboundedSender<Command<B>>,
    observer: &Observer,
) {
    while let Ok(job) = jobs.recv() {
        let work = match job {
            Job::Batch(work) => work,
            Job::Call(call, barrier) => {
                // The call reports its own outcome (a panic included); the
                // barrier is reached whatever it did.
                let _ = catch_unwind(AssertUnwindSafe(|| call()));
                barrier.wait();
                continue;
            }
        };
        // The driver answers once the job is in the device accounts and the timeline.
        let finished = Command::Finished(run_batch(backend, observer, work));
        if let Err(mpsc::error::SendError(Command::Finished(ran))) = done.send(finished) {
            for (reply, answer) in ran.answers {
                let _ = reply.send(answer);
            }
        }
    }
}

/// A batch that ran: what the driver needs to finish it.
pub(crate) struct Finished<O> {
    pub job: JobId,
    /// The call's clocks: its measured run time (`wall`, also when the model
    /// failed), and the running thread's CPU time and run delay in it.
    pub clocks: CallClocks,
    pub failed: bool,
    /// The answers, for the driver to send once the job is in the device
    /// accounts and the timeline (a client that reads them after its answer
    /// sees its batch).
    pub answers: Vec<Answered<O>>,
}

/// Runs one batch through `backend`, catching a panic as a model failure,
/// and adds it to its model's statistics; on an executor thread or (the
/// inline rule) the driver's.
pub(crate) fn run_batch<B: Backend>(
    backend: &B,
    observer: &Observer,
    work: Work<B>,
) -> Finished<B::Output> {
    let Work {
        info,
        model_name,
        items,
    } = work;
    let (inputs, answers): (Vec<_>, Vec<_>) = items
        .into_iter()
        .map(|item| (item.input, (item.reply, item.queued)))
        .unzip();
    let expected = inputs.len();
    let mark = Mark::now();
    let result = catch_unwind(AssertUnwindSafe(|| backend.run(&info, inputs)));
    let clocks = mark.since();
    let run = clocks.wall;
    let outputs = match result {
        Ok(Ok(outputs)) if outputs.len() == expected => Ok(outputs),
        Ok(Ok(outputs)) => Err(format!(
            "returned {} outputs for a batch of {expected} requests",
            outputs.len()
        )),
        Ok(Err(message)) => Err(message),
        Err(panic) => Err(format!("panicked: {}", panic_message(&*panic))),
    };
    // Statistics first: a client that reads them after its answer sees its batch.
    let queued = answers.iter().map(|a| a.1);
    match &outputs {
        Ok(_) => observer.batch_ran(&info, queued, run),
        Err(_) => observer.batch_failed(&info, queued, run),
    }
    let failed = outputs.is_err();
    let answers: Vec<_> = match outputs {
        Ok(outputs) => answers
            .into_iter()
            .zip(outputs)
            .map(|((reply, queued), output)| {
                let answer = Ok(Reply {
                    output,
                    queued,
                    run,
                    batch_rows: info.rows,
                    sent: 0, // the driver's, when it sends it
                });
                (reply, answer)
            })
            .collect(),
        Err(message) => {
            let error = ServerError::ModelFailed {
                model: model_name.to_string(),
                message,
            };
            answers
                .into_iter()
                .map(|(reply, _)| (reply, Err(error.clone())))
                .collect()
        }
    };
    Finished {
        job: info.job,
        clocks,
        failed,
        answers,
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic".to_owned()
    }
}
