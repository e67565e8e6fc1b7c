//! Loads the ACL libraries and lists what they offer: the directory they came from, whether
//! graph capture (`aclmdlRI*`) is there, and which aclnn operators `libopapi.so` exports.
//!
//! ```sh
//! cargo run -p acl-sys --example load                                   # with CANN's set_env.sh sourced
//! cargo run -p acl-sys --features test-double --example load -- --test-double  # the ACL test double
//! ```
//!
//! Without ACL it prints why it could not be loaded (where it looked, how to fix it).

use acl_sys::Api;

fn main() {
    #[cfg(feature = "test-double")]
    let _double = if std::env::args().any(|a| a == "--test-double") {
        let dir = std::env::temp_dir().join("acl-sys-example-double");
        let d = acl_sys::test_double::TestDouble::build(&dir).expect("the test double builds");
        println!(
            "using the ACL test double (not an NPU) in {}",
            d.root().display()
        );
        std::env::set_var("ASCEND_HOME_PATH", d.root());
        Some(d)
    } else {
        None
    };
    let api = match Api::load() {
        Ok(api) => api,
        Err(e) => {
            println!("ACL is not usable here: {e}");
            return;
        }
    };
    println!("ACL loaded from {}", api.dir().display());
    println!("graph capture: {}", api.has_capture());
    let o = &api.ops;
    let ops = [
        ("aclnnAdd", o.add.is_some()),
        ("aclnnMatmul", o.matmul.is_some()),
        ("aclnnRelu", o.relu.is_some()),
        ("aclnnSoftmax", o.softmax.is_some()),
        ("aclnnCast", o.cast.is_some()),
    ];
    for (name, there) in ops {
        println!("{name}: {}", if there { "exported" } else { "missing" });
    }
}
