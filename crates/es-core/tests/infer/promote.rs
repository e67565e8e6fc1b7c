//! GE's dtype promotion for the element-wise family (`src/infer/promote.rs`): mixed operand
//! dtypes give the promoted dtype, and the compile inserts the Casts that make them one.

use super::*;
use es_core::infer::{infer_graph, insert_promotion_casts};

#[test]
fn element_wise_ops_promote_mixed_dtypes_as_ge() {
    let cases = [
        ("Add", FLOAT, INT64, FLOAT),
        ("Add", INT32, INT64, INT64),
        ("Sub", FLOAT16, FLOAT, FLOAT),
        ("Mul", BOOL, INT32, INT32),
        ("Maximum", BF16, FLOAT16, FLOAT),
        ("Less", INT32, FLOAT, BOOL),
    ];
    for (op, a, c, want) in cases {
        let mut t = T::new();
        let got = t.ok_in(op, &x12(Typed(a, &[2]), Typed(c, &[2])), &[]);
        assert_eq!(got.0, want, "{op}({a}, {c})");
    }
    // An op outside the family keeps one dtype per type variable.
    let mut t = T::new();
    let x = t.input(FLOAT, &[2]);
    let y = t.input(INT32, &[2]);
    let e = t
        .fail("Pow", &[("x1", &[x]), ("x2", &[y])], &[])
        .to_string();
    assert!(e.contains("same dtype"), "{e}");
}

#[test]
fn promotion_casts_make_the_operands_one_dtype() {
    let mut t = T::new();
    let x = t.input(FLOAT, &[2]);
    let y = t.input(INT64, &[2]);
    let add = t.call("Add", &[("x1", &[x]), ("x2", &[y])], &[]).unwrap();
    t.b.set_output(
        OutPort {
            node: add,
            index: 0,
        },
        0,
    )
    .unwrap();
    let mut g = t.b.build_and_reset().unwrap();
    infer_graph(&mut g).unwrap();
    assert_eq!(insert_promotion_casts(&mut g).unwrap(), 1);
    let add = g.find("Add_0").unwrap();
    let n = g.node(add).unwrap();
    let src = n.inputs[1].source.unwrap();
    let cast = g.node(src.node).unwrap();
    assert_eq!(cast.op_type, "Cast");
    assert_eq!(cast.outputs[0].desc.dtype, FLOAT);
    assert!(n.inputs.iter().all(|i| i.desc.dtype == FLOAT));
    g.validate().unwrap();
    // Nothing left to do a second time.
    assert_eq!(insert_promotion_casts(&mut g).unwrap(), 0);
}
