//! [`SessionConfig`]: the one typed configuration of a session.
//!
//! How lanes' devices map to it (as `python/lanes/serving/devices.py` does for
//! Python onnxruntime): `cpu` and `cpu:N` run on [`Provider::Cpu`] with
//! `intra_op_threads` = the device's threads (`--cpu-threads`, or the cores
//! divided among the executors); `sim:N` on the CPU with one thread; `cuda:N`
//! on [`Provider::Cuda`] with `device: N`. Every session runs its graph
//! sequentially with one inter-op thread, and its intra-op threads do not spin
//! while idle, so a session uses the cores it was given and no more.

use crate::OnnxError;

/// The most intra-op threads a session may have.
pub const MAX_THREADS: usize = 1024;

/// Where a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// ONNX Runtime's CPU execution provider.
    Cpu,
    /// The CUDA execution provider on GPU `device` (by index); needs a library
    /// built with it (the `onnxruntime-gpu` wheel's).
    Cuda { device: u32 },
}

/// ONNX Runtime's graph optimisation levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Optimization {
    /// No graph rewriting.
    Disable,
    /// Semantics-preserving rewrites such as constant folding.
    Basic,
    /// Basic plus node fusions.
    Extended,
    /// Everything, including layout changes (ONNX Runtime's default).
    #[default]
    All,
}

impl Optimization {
    pub(crate) fn to_ort(self) -> ort::session::builder::GraphOptimizationLevel {
        use ort::session::builder::GraphOptimizationLevel as L;
        match self {
            Self::Disable => L::Disable,
            Self::Basic => L::Level1,
            Self::Extended => L::Level2,
            Self::All => L::All,
        }
    }
}

/// How a session is made (see the module overview for the device mapping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Threads for parallelism inside one operator, 1 to [`MAX_THREADS`].
    pub intra_op_threads: usize,
    /// Graph optimisation level.
    pub optimization: Optimization,
    /// Execution provider.
    pub provider: Provider,
}

impl Default for SessionConfig {
    /// One intra-op thread on the CPU, every optimisation.
    fn default() -> Self {
        Self {
            intra_op_threads: 1,
            optimization: Optimization::All,
            provider: Provider::Cpu,
        }
    }
}

impl SessionConfig {
    /// Refuse a field out of range, naming it, its value and what is allowed.
    pub fn validate(&self) -> Result<(), OnnxError> {
        if !(1..=MAX_THREADS).contains(&self.intra_op_threads) {
            return Err(OnnxError::BadConfig(format!(
                "intra_op_threads = {}: must be from 1 to {MAX_THREADS}",
                self.intra_op_threads
            )));
        }
        if let Provider::Cuda { device } = self.provider {
            if device > i32::MAX as u32 {
                return Err(OnnxError::BadConfig(format!(
                    "provider cuda device {device}: must be from 0 to {}",
                    i32::MAX
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate() {
        let cpu = |threads| SessionConfig {
            intra_op_threads: threads,
            ..SessionConfig::default()
        };
        let cuda = |device| SessionConfig {
            provider: Provider::Cuda { device },
            ..SessionConfig::default()
        };
        let cases = [
            (cpu(1), None),
            (cpu(MAX_THREADS), None),
            (cpu(0), Some("intra_op_threads = 0: must be from 1 to 1024")),
            (
                cpu(MAX_THREADS + 1),
                Some("intra_op_threads = 1025: must be from 1 to 1024"),
            ),
            (cuda(3), None),
            (
                cuda(u32::MAX),
                Some("provider cuda device 4294967295: must be from 0 to 2147483647"),
            ),
        ];
        for (config, want) in cases {
            match (config.validate(), want) {
                (Ok(()), None) => {}
                (Err(e), Some(message)) => {
                    assert_eq!(e.code(), "bad_config");
                    assert_eq!(e.to_string(), message);
                }
                (got, want) => panic!("{config:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
