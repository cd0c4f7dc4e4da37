//! Criterion benches of the same AES-GCM operations as the `speed` tool: in-place seal and
//! open with a detached tag and 13 bytes of AD, one key, for ours on every back end this CPU
//! has, each peer built in, and our AES-CTR-only loop as the roofline.
//!
//! Each sample is timed with the thread's CPU clock through `iter_custom`, as `speed` does,
//! so the figures of the two agree. Warm-up and measurement are kept short (0.3 s and 1 s)
//! because the benchmark has about 300 points; narrow it with a filter, e.g.
//! `cargo bench -p benches -- "AES-128-GCM seal/ours"`.

use std::time::Duration;

use benches::clock::ForCount;
use benches::gcm::Subject;
use benches::{Alg, Op, ours, peers};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const SIZES: [usize; 5] = [16, 256, 1350, 4096, 16384];

fn subjects(alg: Alg) -> Vec<Box<dyn Subject>> {
    let mut v = vec![ours::subject(alg, None)];
    let default = ours::backend_in_use(alg);
    for b in ours::available_backends() {
        if b != default {
            v.push(ours::subject(alg, Some(b)));
        }
    }
    v.extend(peers::subjects(alg));
    v
}

fn aes_gcm(c: &mut Criterion) {
    for alg in Alg::ALL {
        let mut subs = subjects(alg);
        for op in Op::ALL {
            let mut g = c.benchmark_group(format!("{} {}", alg.name(), op.name()));
            g.warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(1))
                .sample_size(20);
            for len in SIZES {
                g.throughput(Throughput::Bytes(len as u64));
                for s in subs.iter_mut() {
                    let id = BenchmarkId::new(s.name().to_string(), len);
                    g.bench_function(id, |b| {
                        b.iter_custom(|n| Duration::from_nanos(s.run_n(op, len, n).ns))
                    });
                }
                if op == Op::Seal {
                    g.bench_function(BenchmarkId::new("aes-ctr-roofline", len), |b| {
                        b.iter_custom(|n| {
                            Duration::from_nanos(ours::ctr_roofline(alg, None, len, ForCount(n)).ns)
                        })
                    });
                }
            }
            g.finish();
        }
    }
}

criterion_group!(benches, aes_gcm);
criterion_main!(benches);
