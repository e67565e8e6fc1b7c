//! Host-side cost of launching a chain of operators eagerly (per operator: two tensor
//! descriptors, the aclnn first phase, the launch) against replaying the same chain captured
//! once, measured against the ACL test double (which also computes each operator on the
//! host, the same work both ways). It measures ge-rs's and the API's host overhead, not an NPU.

use acl_sys::test_double::TestDouble;
use acl_sys::{ffi, Api};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ge_acl::acl::ops::{self, Unary};
use ge_acl::acl::{Acl, Tensor};

fn launch(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let double = TestDouble::build(dir.path()).expect("the test double builds");
    let api: &'static Api = Box::leak(Box::new(Api::load_from(&[double.lib_dir()]).unwrap()));
    let acl = Acl::with_api(api).unwrap();
    let mut device = acl.open_device(0).unwrap();
    let mut stream = device.create_stream().unwrap();
    let (a, b) = (device.alloc(64 * 4).unwrap(), device.alloc(64 * 4).unwrap());
    let mut g = c.benchmark_group("acl_test_double_chain");
    for n in [10usize, 100] {
        // a -> b -> a -> ... (Neg), n launches of 64 floats.
        let step = |i: usize| {
            if i.is_multiple_of(2) {
                (&a, &b)
            } else {
                (&b, &a)
            }
        };
        g.bench_with_input(BenchmarkId::new("eager", n), &n, |bch, &n| {
            bch.iter(|| {
                for i in 0..n {
                    let (x, y) = step(i);
                    let tx = Tensor::contiguous(api, ffi::ACL_FLOAT, &[64], x).unwrap();
                    let ty = Tensor::contiguous(api, ffi::ACL_FLOAT, &[64], y).unwrap();
                    let e = ops::unary(api, Unary::Neg, &tx, &ty).unwrap();
                    stream.launch(e, None).unwrap();
                }
                stream.synchronize().unwrap();
            })
        });
        let graph = {
            let mut prepared = Vec::new();
            for i in 0..n {
                let (x, y) = step(i);
                let tx = Tensor::contiguous(api, ffi::ACL_FLOAT, &[64], x).unwrap();
                let ty = Tensor::contiguous(api, ffi::ACL_FLOAT, &[64], y).unwrap();
                let e = ops::unary(api, Unary::Neg, &tx, &ty).unwrap();
                prepared.push((e, tx, ty));
            }
            let mut cap = stream.capture(&mut device).unwrap();
            for (e, _tx, _ty) in prepared {
                cap.launch(e, None).unwrap();
            }
            cap.end().unwrap()
        };
        g.bench_with_input(BenchmarkId::new("replay", n), &n, |bch, _| {
            bch.iter(|| {
                graph.replay(&mut stream).unwrap();
                stream.synchronize().unwrap();
            })
        });
    }
    g.finish();
    drop((a, b, stream, device));
    drop(double);
}

criterion_group!(benches, launch);
criterion_main!(benches);
