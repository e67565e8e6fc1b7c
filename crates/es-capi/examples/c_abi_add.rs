//! The seed's add graph through the C ABI, from Rust: build `x + y`, run it on the CPU session,
//! print the result. `cargo run -p es-capi --example c_abi_add`
use es_capi::*;
use std::ffi::CStr;

fn main() {
    unsafe {
        let b = EsCreateGraphBuilder(c"add".as_ptr());
        let x = EsCreateGraphInput(b, 0);
        let y = EsCreateGraphInput(b, 1);
        let sum = EsAdd(x, y);
        assert_eq!(EsSetGraphOutput(sum, 0), ES_SUCCESS);
        let g = EsBuildGraphAndReset(b);
        EsDestroyGraphBuilder(b);
        assert!(
            !g.is_null(),
            "{:?}",
            CStr::from_ptr(EsGetLastErrorMessage())
        );

        let s = EsCreateSession(std::ptr::null(), std::ptr::null(), 0);
        assert_eq!(EsSessionAddGraph(s, 1, g), ES_SUCCESS);
        let dims = [3i64];
        let a = EsCreateEsCTensor([1f32, 2., 3.].as_ptr().cast(), dims.as_ptr(), 1, 0, 2);
        let c = EsCreateEsCTensor([10f32, 20., 30.].as_ptr().cast(), dims.as_ptr(), 1, 0, 2);
        let mut out = [std::ptr::null_mut(); 1];
        let mut n = 0i64;
        let st = EsSessionRunGraph(
            s,
            1,
            [a as *const _, c as *const _].as_ptr(),
            2,
            out.as_mut_ptr(),
            1,
            &mut n,
        );
        assert_eq!(
            st,
            ES_SUCCESS,
            "{:?}",
            CStr::from_ptr(EsGetLastErrorMessage())
        );
        let data = std::slice::from_raw_parts(EsGetTensorData(out[0]).cast::<f32>(), 3);
        println!("x + y = {data:?}");
        assert_eq!(data, [11., 22., 33.]);
        for t in [a, c, out[0]] {
            EsDestroyEsCTensor(t);
        }
        EsDestroySession(s);
        EsDestroyGraph(g);
    }
}
