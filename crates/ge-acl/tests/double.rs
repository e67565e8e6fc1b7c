//! The safe ACL layer (`ge_acl::acl`) against the ACL test double (a C library built by this
//! test that stands in for ACL; see `acl_sys::test_double`). Nothing here runs on an NPU.

use acl_sys::ffi;
use acl_sys::test_double::TestDouble;
use acl_sys::Api;
use ge_acl::acl::ops::{self, Binary, Reduce, Unary};
use ge_acl::acl::{Acl, Device, DeviceBuffer, Error, Stream, Tensor};
use std::sync::{Mutex, MutexGuard, OnceLock};

struct Fixture {
    double: TestDouble,
    acl: Acl,
    _dir: tempfile::TempDir,
}

/// The double is one global state: the tests take turns.
fn fixture() -> (MutexGuard<'static, ()>, &'static Fixture) {
    static TURN: Mutex<()> = Mutex::new(());
    static FIX: OnceLock<Fixture> = OnceLock::new();
    let guard = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let f = FIX.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let double = TestDouble::build(dir.path()).expect("the test double builds");
        let api: &'static Api = Box::leak(Box::new(
            Api::load_from(&[double.lib_dir()]).expect("the double loads"),
        ));
        let acl = Acl::with_api(api).expect("aclInit");
        Fixture {
            double,
            acl,
            _dir: dir,
        }
    });
    f.double.reset();
    (guard, f)
}

/// A contiguous float32 tensor of shape `dims` over `buf`.
fn f32_tensor(api: &'static Api, dims: &[i64], buf: &DeviceBuffer) -> Tensor {
    Tensor::contiguous(api, ffi::ACL_FLOAT, dims, buf).unwrap()
}

/// Device 0 and a stream on it.
fn device_and_stream(f: &Fixture) -> (Device, Stream) {
    let device = f.acl.open_device(0).unwrap();
    let stream = device.create_stream().unwrap();
    (device, stream)
}

/// A device buffer of each size.
fn buffers<const N: usize>(device: &Device, sizes: [usize; N]) -> [DeviceBuffer; N] {
    sizes.map(|n| device.alloc(n).unwrap())
}

/// Waits for `stream`, then reads the first `n` bytes of `buf` back.
fn read_back(device: &Device, stream: &mut Stream, buf: &DeviceBuffer, n: usize) -> Vec<u8> {
    stream.synchronize().unwrap();
    let mut out = vec![0u8; n];
    device.copy_from_device(&mut out, buf, 0).unwrap();
    out
}

/// Launches unary `op` from tensor `x` to `y` (no workspace), then reads the first `n` bytes of
/// `out` (y's buffer) back as floats.
fn run_unary(
    api: &'static Api,
    (device, stream): (&Device, &mut Stream),
    (op, x, y): (Unary, &Tensor, &Tensor),
    (out, n): (&DeviceBuffer, usize),
) -> Vec<f32> {
    stream
        .launch(ops::unary(api, op, x, y).unwrap(), None)
        .unwrap();
    f32s(&read_back(device, stream, out, n))
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn copies_and_an_eager_launch() {
    let (_g, f) = fixture();
    let api = f.acl.api();
    assert!(api.has_capture());
    let (device, mut stream) = device_and_stream(f);
    let [x, y] = buffers(&device, [16, 16]);
    device
        .copy_to_device(&x, 0, &f32_bytes(&[-1.0, 2.0, -3.0, 4.0]))
        .unwrap();
    let tx = f32_tensor(api, &[4], &x);
    let ty = f32_tensor(api, &[4], &y);
    let relu = (Unary::Relu, &tx, &ty);
    assert_eq!(
        run_unary(api, (&device, &mut stream), relu, (&y, 16)),
        vec![0.0, 2.0, 0.0, 4.0]
    );
    // A copy that does not fit is refused before reaching ACL.
    assert!(matches!(
        device.copy_to_device(&x, 8, &[0u8; 16]),
        Err(Error::Invalid(_))
    ));
    drop((tx, ty, x, y, stream, device));
    assert_eq!(f.double.violations(), 0, "{}", f.double.log());
    for kind in [
        "device_buffers",
        "streams",
        "contexts",
        "tensors",
        "executors",
        "scalars",
    ] {
        assert_eq!(f.double.live(kind), 0, "{kind} left");
    }
}

#[test]
fn every_bound_operator_computes() {
    let (_g, f) = fixture();
    let api = f.acl.api();
    let (device, mut stream) = device_and_stream(f);
    let [a, b, o, ws] = buffers(&device, [24, 24, 64, 1024]);
    device
        .copy_to_device(&a, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
        .unwrap();
    device
        .copy_to_device(&b, 0, &f32_bytes(&[1.0, 0.5, 2.0, -1.0, 1.0, 3.0]))
        .unwrap();
    let t = |buf, dims: &[i64]| f32_tensor(api, dims, buf);
    let read = |n: usize, stream: &mut Stream| f32s(&read_back(&device, stream, &o, n * 4));
    let (ta, tb) = (t(&a, &[2, 3]), t(&b, &[2, 3]));
    let cases: Vec<(Binary, Vec<f32>)> = vec![
        (Binary::Add, vec![2.0, 2.5, 5.0, 3.0, 6.0, 9.0]),
        (Binary::Sub, vec![0.0, 1.5, 1.0, 5.0, 4.0, 3.0]),
        (Binary::Mul, vec![1.0, 1.0, 6.0, -4.0, 5.0, 18.0]),
        (Binary::Div, vec![1.0, 4.0, 1.5, -4.0, 5.0, 2.0]),
    ];
    for (op, want) in cases {
        let to = t(&o, &[2, 3]);
        stream
            .launch(ops::binary(api, op, &ta, &tb, &to).unwrap(), Some(&ws))
            .unwrap();
        assert_eq!(read(6, &mut stream), want, "{op:?}");
    }
    // [2,3] @ [3,2] (b viewed transposed: dims [3,2], strides [1,3]).
    let tbt = Tensor::new(api, ffi::ACL_FLOAT, &[3, 2], &[1, 3], 0, &b).unwrap();
    let to = t(&o, &[2, 2]);
    let e = ops::matmul(api, &ta, &tbt, &to).unwrap();
    stream.launch(e, Some(&ws)).unwrap();
    assert_eq!(read(4, &mut stream), vec![8.0, 10.0, 18.5, 19.0]);
    // Softmax rows sum to one.
    let to = t(&o, &[2, 3]);
    stream
        .launch(ops::softmax(api, &ta, -1, &to).unwrap(), Some(&ws))
        .unwrap();
    let s = read(6, &mut stream);
    assert!((s[0] + s[1] + s[2] - 1.0).abs() < 1e-6 && s[2] > s[1]);
    // Permute [2,3] -> [3,2].
    let to = t(&o, &[3, 2]);
    stream
        .launch(ops::permute(api, &ta, &[1, 0], &to).unwrap(), Some(&ws))
        .unwrap();
    assert_eq!(read(6, &mut stream), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // Reductions over dim 1.
    for (r, want) in [
        (Reduce::Sum, vec![6.0, 15.0]),
        (Reduce::Mean, vec![2.0, 5.0]),
        (Reduce::Max, vec![3.0, 6.0]),
        (Reduce::Min, vec![1.0, 4.0]),
    ] {
        let to = t(&o, &[2]);
        let e = ops::reduce(api, r, &ta, &[1], false, ffi::ACL_FLOAT, &to).unwrap();
        stream.launch(e, Some(&ws)).unwrap();
        assert_eq!(read(2, &mut stream), want, "{r:?}");
    }
    // Cast f32 -> i32.
    let ti = Tensor::contiguous(api, ffi::ACL_INT32, &[2, 3], &o).unwrap();
    stream
        .launch(ops::cast(api, &tb, ffi::ACL_INT32, &ti).unwrap(), Some(&ws))
        .unwrap();
    let out = read_back(&device, &mut stream, &o, 24);
    let ints: Vec<i32> = out
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ints, vec![1, 0, 2, -1, 1, 3]);
    assert_eq!(f.double.violations(), 0, "{}", f.double.log());
}

#[test]
fn a_launch_without_its_workspace_is_refused_before_acl() {
    let (_g, f) = fixture();
    let api = f.acl.api();
    let (device, mut stream) = device_and_stream(f);
    let [a, o] = buffers(&device, [16, 16]);
    let ta = f32_tensor(api, &[2, 2], &a);
    let to = f32_tensor(api, &[2, 2], &o);
    let e = ops::matmul(api, &ta, &ta, &to).unwrap();
    assert!(e.workspace_size() > 0);
    let err = stream.launch(e, None).unwrap_err();
    assert!(err.to_string().contains("needs a workspace"), "{err}");
}

#[test]
fn capture_records_and_replay_runs() {
    let (_g, f) = fixture();
    let api = f.acl.api();
    let (mut device, mut stream) = device_and_stream(f);
    let [x, y] = buffers(&device, [8, 8]);
    let tx = f32_tensor(api, &[2], &x);
    let ty = f32_tensor(api, &[2], &y);
    let e = ops::unary(api, Unary::Neg, &tx, &ty).unwrap();
    let graph = {
        let mut cap = stream.capture(&mut device).unwrap();
        cap.launch(e, None).unwrap();
        cap.end().unwrap()
    };
    for v in [[1.0f32, -2.0], [3.0, 4.0]] {
        device.copy_to_device(&x, 0, &f32_bytes(&v)).unwrap();
        graph.replay(&mut stream).unwrap();
        assert_eq!(
            f32s(&read_back(&device, &mut stream, &y, 8)),
            vec![-v[0], -v[1]]
        );
    }
    assert_eq!(f.double.calls("aclmdlRIExecuteAsync"), 2);
    assert_eq!(f.double.live("graphs"), 1);
    drop(graph);
    assert_eq!(f.double.live("graphs"), 0);
    assert_eq!(f.double.violations(), 0, "{}", f.double.log());
}

#[test]
fn a_buffer_dropped_during_capture_is_freed_after_it() {
    let (_g, f) = fixture();
    let (mut device, mut stream) = device_and_stream(f);
    let scratch = device.alloc(64).unwrap();
    let before = f.double.live("device_buffers");
    {
        let cap = stream.capture(&mut device).unwrap();
        drop(scratch);
        // Not freed yet: aclrtFree is illegal while the stream captures.
        assert_eq!(f.double.live("device_buffers"), before);
        drop(cap.end().unwrap());
    }
    assert_eq!(f.double.live("device_buffers"), before - 1);
    assert_eq!(f.double.violations(), 0, "{}", f.double.log());
}

#[test]
fn a_capture_dropped_without_end_ends_and_destroys() {
    let (_g, f) = fixture();
    let (mut device, mut stream) = device_and_stream(f);
    {
        let _cap = stream.capture(&mut device).unwrap();
        assert_eq!(f.double.live("capturing"), 1);
    }
    assert_eq!(f.double.live("capturing"), 0);
    assert_eq!(f.double.live("graphs"), 0);
    assert_eq!(f.double.calls("aclmdlRICaptureEnd"), 1);
    assert_eq!(
        stream.capture_status().unwrap(),
        ffi::ACL_MODEL_RI_CAPTURE_STATUS_NONE
    );
}

#[test]
fn error_codes_become_errors_with_the_runtime_message() {
    let (_g, f) = fixture();
    let api = f.acl.api();
    let device = f.acl.open_device(0).unwrap();
    f.double
        .fail_next("aclrtMalloc", 207001, "injected: out of device memory");
    let e = device.alloc(64).unwrap_err();
    assert_eq!(
        e,
        Error::Acl {
            call: "aclrtMalloc",
            code: 207001,
            message: "injected: out of device memory".into()
        }
    );
    assert!(e
        .to_string()
        .contains("aclrtMalloc failed with error 207001"));
    // A first phase that fails.
    let a = device.alloc(8).unwrap();
    let ta = f32_tensor(api, &[2], &a);
    f.double
        .fail_next("aclnnReluGetWorkspaceSize", 161002, "injected: bad shape");
    let e = ops::unary(api, Unary::Relu, &ta, &ta).err().unwrap();
    assert!(e.to_string().contains("161002") && e.to_string().contains("injected: bad shape"));
    // A launch that fails.
    let mut stream = device.create_stream().unwrap();
    let exec = ops::unary(api, Unary::Relu, &ta, &ta).unwrap();
    f.double
        .fail_next("aclnnRelu", 361001, "injected: launch failed");
    let e = stream.launch(exec, None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Acl {
                call: "aclnnRelu",
                code: 361001,
                ..
            }
        ),
        "{e}"
    );
    // The double's own checks: a shape mismatch in the first phase.
    let b = device.alloc(12).unwrap();
    let tb = f32_tensor(api, &[3], &b);
    let e = ops::binary(api, Binary::Mul, &ta, &tb, &ta).err().unwrap();
    assert!(matches!(e, Error::Acl { code: 161002, .. }), "{e}");
    assert!(!e.to_string().ends_with("161002"), "carries a message: {e}");
}

#[test]
fn views_outside_their_buffer_are_refused() {
    let (_g, f) = fixture();
    let device = f.acl.open_device(0).unwrap();
    let a = device.alloc(16).unwrap();
    let api = f.acl.api();
    assert!(matches!(
        Tensor::contiguous(api, ffi::ACL_FLOAT, &[5], &a),
        Err(Error::Invalid(_))
    ));
    assert!(Tensor::new(api, ffi::ACL_FLOAT, &[2, 2], &[1, 2], 0, &a).is_ok());
}

#[test]
fn device_count_and_opening_a_missing_device() {
    let (_g, f) = fixture();
    f.double.set_device_count(2);
    assert_eq!(f.acl.device_count().unwrap(), 2);
    let e = f.acl.open_device(5).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Acl {
                call: "aclrtSetDevice",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(f.double.live("contexts"), 0);
}

#[test]
fn without_the_capture_functions_capture_is_off_and_eager_works() {
    let (_g, _f) = fixture();
    let dir = tempfile::tempdir().unwrap();
    let old = TestDouble::build_with(dir.path(), &["-DACL_TEST_DOUBLE_NO_CAPTURE"]).unwrap();
    // A different file from the fixture's: its own state.
    let api: &'static Api = Box::leak(Box::new(Api::load_from(&[old.lib_dir()]).unwrap()));
    assert!(!api.has_capture());
    let acl = Acl::with_api(api).unwrap();
    let mut device = acl.open_device(0).unwrap();
    let mut stream = device.create_stream().unwrap();
    let e = stream.capture(&mut device).err().unwrap();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let x = device.alloc(8).unwrap();
    device
        .copy_to_device(&x, 0, &f32_bytes(&[-1.0, 1.0]))
        .unwrap();
    let tx = f32_tensor(api, &[2], &x);
    let abs = (Unary::Abs, &tx, &tx);
    assert_eq!(
        run_unary(api, (&device, &mut stream), abs, (&x, 8)),
        vec![1.0, 1.0]
    );
    assert_eq!(old.violations(), 0, "{}", old.log());
}

#[test]
fn device_copies_are_recorded_in_a_capture_and_pinned_host_memory_is_freed() {
    let (_g, f) = fixture();
    let (mut device, mut stream) = device_and_stream(f);
    let [a, b] = buffers(&device, [8, 8]);
    let mut host = device.alloc_host(8).unwrap();
    assert_eq!(host.as_slice(), &[0u8; 8]);
    host.as_mut_slice()
        .copy_from_slice(&f32_bytes(&[1.5, -2.5]));
    assert_eq!(f.double.live("host_buffers"), 1);
    device.copy_to_device(&a, 0, host.as_slice()).unwrap();
    let graph = {
        let mut cap = stream.capture(&mut device).unwrap();
        cap.copy_async(&b, 4, &a, 0, 4).unwrap();
        assert!(cap.copy_async(&b, 6, &a, 0, 4).is_err(), "out of range");
        cap.end().unwrap()
    };
    let mut out = [0u8; 8];
    device.copy_from_device(&mut out, &b, 0).unwrap();
    assert_eq!(f32s(&out), vec![0.0, 0.0], "recorded, not run");
    graph.replay(&mut stream).unwrap();
    assert_eq!(
        f32s(&read_back(&device, &mut stream, &b, 8)),
        vec![0.0, 1.5]
    );
    // Outside a capture the same copy runs on the stream.
    stream.copy_async(&b, 0, &a, 4, 4).unwrap();
    assert_eq!(
        f32s(&read_back(&device, &mut stream, &b, 8)),
        vec![-2.5, 1.5]
    );
    drop((graph, host, a, b, stream, device));
    assert_eq!(f.double.live("host_buffers"), 0);
    assert_eq!(f.double.violations(), 0, "{}", f.double.log());
}
