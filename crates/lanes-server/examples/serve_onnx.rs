//! The native data plane serving ONNX files over KServe v2 REST, for
//! benchmarks of the Rust path (not `lanes serve`, which stays the product
//! until this path carries every feature):
//!
//! ```text
//! cargo run --release -p lanes-server --example serve_onnx -- \
//!     --port 8000 --grpc-port 8001 --policy sjf --devices 2 --threads 1 NAME=PATH[:MAX_BATCH] ...
//! ```
//! Prints `listening on 127.0.0.1:PORT` once ready; stops on Ctrl-C.

use std::path::PathBuf;

use lanes_kserve::CodecConfig;
use lanes_server::app::Limits;
use lanes_server::native::{build, NativeConfig, NativeModel, DEFAULT_INLINE_MAX};
use lanes_serving::Batching;

fn usage(why: &str) -> ! {
    eprintln!(
        "serve_onnx: {why}\nusage: serve_onnx [--port P] [--policy NAME] [--devices N] [--threads T] \
         [--workers W] NAME=PATH[:MAX_BATCH] ..."
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut port, mut grpc_port, mut workers) = (8000u16, 8001u16, 1usize);
    let mut config = NativeConfig {
        policy: "sjf".into(),
        devices: 1,
        intra_op_threads: 1,
        models: Vec::new(),
        codec: CodecConfig::default(),
        limits: Limits::default(),
        inline_max: DEFAULT_INLINE_MAX,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--port" => port = value("--port").parse().unwrap_or_else(|_| usage("--port")),
            "--grpc-port" => {
                grpc_port = value("--grpc-port")
                    .parse()
                    .unwrap_or_else(|_| usage("--grpc-port"))
            }
            "--policy" => config.policy = value("--policy"),
            "--devices" => {
                config.devices = value("--devices")
                    .parse()
                    .unwrap_or_else(|_| usage("--devices"))
            }
            "--threads" => {
                config.intra_op_threads = value("--threads")
                    .parse()
                    .unwrap_or_else(|_| usage("--threads"))
            }
            "--workers" => {
                workers = value("--workers")
                    .parse()
                    .unwrap_or_else(|_| usage("--workers"))
            }
            spec => {
                let (name, rest) = spec.split_once('=').unwrap_or_else(|| usage(spec));
                let (path, batch) = rest.rsplit_once(':').map_or((rest, 0), |(p, b)| {
                    (p, b.parse().unwrap_or_else(|_| usage(spec)))
                });
                config.models.push(NativeModel {
                    name: name.into(),
                    path: PathBuf::from(path),
                    batching: Batching {
                        max_batch_size: batch,
                        ..Batching::default()
                    },
                    timeout_ms: None,
                });
            }
        }
    }
    if config.models.is_empty() {
        usage("no model given");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let app = build(&config).unwrap_or_else(|e| usage(&e.to_string()));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| usage(&format!("port {port}: {e}")));
        let grpc = tokio::net::TcpListener::bind(("127.0.0.1", grpc_port))
            .await
            .unwrap_or_else(|e| usage(&format!("port {grpc_port}: {e}")));
        println!(
            "listening on {} (REST) and {} (gRPC)",
            listener.local_addr().expect("bound"),
            grpc.local_addr().expect("bound")
        );
        let stop = || async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let grpc = tokio::spawn(lanes_server::grpc::serve(grpc, app.clone(), stop()));
        lanes_server::http::serve(listener, app, stop()).await;
        let _ = grpc.await;
    });
}
