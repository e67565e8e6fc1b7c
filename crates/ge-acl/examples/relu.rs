//! Relu and Add on device 0, launched eagerly, then captured once and replayed twice.
//!
//! ```sh
//! cargo run -p ge-acl --example relu                 # with CANN's set_env.sh sourced
//! cargo run -p ge-acl --example relu -- --test-double # against the ACL test double (no NPU)
//! ```
//!
//! Without ACL (and without `--test-double`) it prints why ACL could not be loaded.

use acl_sys::ffi;
use acl_sys::test_double::TestDouble;
use ge_acl::acl::ops::{self, Binary, Unary};
use ge_acl::acl::{Acl, Tensor};

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut _double = None;
    if std::env::args().any(|a| a == "--test-double") {
        let dir = std::env::temp_dir().join("ge-acl-example-double");
        let d = TestDouble::build(&dir)?;
        std::env::set_var("ASCEND_HOME_PATH", d.root());
        println!(
            "using the ACL TEST DOUBLE in {} (not an NPU)",
            d.lib_dir().display()
        );
        _double = Some(d);
    }
    let acl = match Acl::init() {
        Ok(a) => a,
        Err(e) => {
            println!("ACL is not available: {e}");
            return Ok(());
        }
    };
    let api = acl.api();
    println!(
        "ACL from {}: {} device(s), graph capture {}",
        api.dir().display(),
        acl.device_count()?,
        if api.has_capture() {
            "available"
        } else {
            "not available"
        }
    );
    let mut device = acl.open_device(0)?;
    let mut stream = device.create_stream()?;
    let (x, h, y) = (device.alloc(16)?, device.alloc(16)?, device.alloc(16)?);
    let tx = Tensor::contiguous(api, ffi::ACL_FLOAT, &[4], &x)?;
    let th = Tensor::contiguous(api, ffi::ACL_FLOAT, &[4], &h)?;
    let ty = Tensor::contiguous(api, ffi::ACL_FLOAT, &[4], &y)?;

    // Eager: y = relu(x) + x.
    device.copy_to_device(&x, 0, &bytes(&[-1.0, 2.0, -3.0, 4.0]))?;
    stream.launch(ops::unary(api, Unary::Relu, &tx, &th)?, None)?;
    stream.launch(ops::binary(api, Binary::Add, &th, &tx, &ty)?, None)?;
    stream.synchronize()?;
    let mut out = [0u8; 16];
    device.copy_from_device(&mut out, &y, 0)?;
    println!("eager:    relu(x) + x = {:?}", floats(&out));

    if !api.has_capture() {
        return Ok(());
    }
    // Captured: the first phases run before the capture; the capture records the launches.
    let relu = ops::unary(api, Unary::Relu, &tx, &th)?;
    let add = ops::binary(api, Binary::Add, &th, &tx, &ty)?;
    let graph = {
        let mut cap = stream.capture(&mut device)?;
        cap.launch(relu, None)?;
        cap.launch(add, None)?;
        cap.end()?
    };
    for input in [[1.0f32, -1.0, 0.5, -0.5], [10.0, 20.0, -30.0, 40.0]] {
        device.copy_to_device(&x, 0, &bytes(&input))?;
        graph.replay(&mut stream)?;
        stream.synchronize()?;
        device.copy_from_device(&mut out, &y, 0)?;
        println!("replayed: x = {input:?} -> {:?}", floats(&out));
    }
    Ok(())
}
