//! Data types, formats, shapes, tensor descriptions and tensors (`es_core::types`).

use super::*;

/// Every member of `$ty` in `$all` comes back from its value and from its name (with or without
/// `$prefix`) and prints as its name; each `(member, value)` of `$known` has that GE value; each
/// of `$bad_values` and `$bad_names` is refused.
macro_rules! check_values_and_names {
    ($ty:ident, $all:expr, $prefix:literal, $known:expr, $bad_values:expr, $bad_names:expr) => {
        for d in $all {
            assert_eq!($ty::from_value(d.value() as i64).unwrap(), d);
            assert_eq!($ty::from_name(d.name()).unwrap(), d);
            assert!(d.name().starts_with($prefix), "{}", d.name());
            let bare = &d.name()[$prefix.len()..];
            assert_eq!($ty::from_name(bare).unwrap(), d, "bare name of {d}");
            assert_eq!(d.to_string(), d.name());
        }
        for (d, v) in $known {
            assert_eq!(d.value(), v, "{d}");
        }
        for bad in $bad_values {
            assert!($ty::from_value(bad).is_err(), "{bad}");
        }
        for bad in $bad_names {
            assert!($ty::from_name(bad).is_err(), "{bad:?}");
        }
    };
}

#[test]
fn datatype_round_trips_every_member() {
    // The public list of members is every value `from_value` knows, in numeric order.
    assert_eq!(DataType::VALUES, all_dtypes().as_slice());
    assert_eq!(all_dtypes().len(), 46);
    for w in all_dtypes().windows(2) {
        assert!(w[0].value() < w[1].value(), "VALUES is in numeric order");
    }
    check_values_and_names!(
        DataType,
        all_dtypes(),
        "DT_",
        [
            (DataType::FLOAT, 0),
            (DataType::FLOAT16, 1),
            (DataType::INT8, 2),
            (DataType::INT32, 3),
            (DataType::UINT8, 4),
            (DataType::INT64, 9),
            (DataType::DOUBLE, 11),
            (DataType::BOOL, 12),
            (DataType::STRING, 13),
            (DataType::BF16, 27),
            (DataType::UNDEFINED, 28),
            (DataType::UINT4, 1000),
            (DataType::FLOAT8_E4M3FNUZ, 1001),
            (DataType::FLOAT8_E5M2FNUZ, 1002),
        ],
        [-1i64, 5, 44, 999, 1003, i64::MAX, i64::MIN],
        ["", "DT_", "DT_NOPE", "FLOAT32", "DT_FLOAT ", "FORMAT_NCHW"]
    );
    assert_eq!(DataType::FLOAT.name(), "DT_FLOAT");
    assert_eq!(DataType::BF16.name(), "DT_BF16");
}

#[test]
fn format_round_trips_every_member() {
    // `Format::ALL` is the variant FORMAT_ALL, hence the list's name `VALUES`.
    assert_eq!(Format::ALL.value(), 41);
    let all = all_formats();
    assert_eq!(Format::VALUES, all.as_slice());
    assert_eq!(all.len(), 52);
    for (i, f) in all.iter().enumerate() {
        assert_eq!(f.value(), i as i32, "values are 0..=51 without gaps");
    }
    check_values_and_names!(
        Format,
        all,
        "FORMAT_",
        [
            (Format::NCHW, 0),
            (Format::NHWC, 1),
            (Format::ND, 2),
            (Format::NC1HWC0, 3),
            (Format::FRACTAL_Z, 4),
            (Format::FRACTAL_NZ, 29),
            (Format::NCDHW, 30),
        ],
        [-1i64, 52, 99, i64::MIN],
        ["", "FORMAT_", "FORMAT_XYZ", "DT_FLOAT"]
    );
    assert_eq!(Format::FRACTAL_NZ.name(), "FORMAT_FRACTAL_NZ");
}

#[test]
fn datatype_sizes_and_classes() {
    assert_eq!(DataType::FLOAT.size(), Some(4));
    assert_eq!(DataType::FLOAT16.size(), Some(2));
    assert_eq!(DataType::BF16.size(), Some(2));
    assert_eq!(DataType::INT64.size(), Some(8));
    assert_eq!(DataType::BOOL.size(), Some(1));
    assert_eq!(DataType::COMPLEX128.size(), Some(16));
    assert_eq!(DataType::STRING.size(), None);
    assert_eq!(DataType::INT4.size(), None);
    assert!(DataType::BF16.is_float() && !DataType::INT32.is_float());
    assert!(DataType::UINT64.is_integer() && !DataType::BOOL.is_integer());
}

#[test]
fn shape_validate_and_accessors() {
    for ok in [
        &[][..],
        &[0],
        &[3, -1],
        &[-2],
        &[1, 2, 3, 4, 5, 6],
        &[-1, -1],
    ] {
        assert!(Shape::validate(ok).is_ok(), "{ok:?}");
    }
    for bad in [
        &[-3][..],
        &[2, -2],
        &[-2, -2],
        &[-2, 3],
        &[i64::MIN],
        &[4, 5, -7],
    ] {
        let e = Shape::validate(bad).unwrap_err();
        assert!(matches!(e, Error::Value(_)), "{e:?}");
        assert!(e.to_string().contains("invalid dim"), "{e}");
    }
    let s = Shape::new(vec![2, 3]);
    assert_eq!(s.dims(), &[2, 3]);
    assert_eq!(s.rank(), Some(2));
    assert_eq!(s.num_elements(), Some(6));
    assert_eq!(Shape::scalar().dims(), &[] as &[i64]);
    assert_eq!(Shape::scalar().rank(), Some(0));
    assert_eq!(Shape::scalar().num_elements(), Some(1));
    assert_eq!(Shape::unknown_rank().dims(), &[UNKNOWN_RANK]);
    assert_eq!(Shape::unknown_rank().rank(), None);
    assert_eq!(Shape::unknown_rank().num_elements(), None);
    assert_eq!(Shape::new(vec![UNKNOWN_DIM, 3]).rank(), Some(2));
    assert_eq!(Shape::new(vec![UNKNOWN_DIM, 3]).num_elements(), None);
    assert_eq!(Shape::new(vec![0, 7]).num_elements(), Some(0));
    assert_eq!(
        Shape::new(vec![i64::MAX, 2]).num_elements(),
        None,
        "overflow is None"
    );
    assert_eq!(Shape::new(vec![2, 3]).to_string(), "[2, 3]");
    assert_eq!(Shape::new(vec![1, 2, 3, 4, 5, 6, 7, 8]).dims().len(), 8);
}

#[test]
fn tensor_new_checks_byte_count() {
    let d = |dims: Vec<i64>| TensorDesc::new(DataType::FLOAT, Shape::new(dims));
    assert!(Tensor::new(d(vec![2, 3]), vec![0; 24]).is_ok());
    assert!(Tensor::new(d(vec![]), vec![0; 4]).is_ok());
    assert!(Tensor::new(d(vec![0, 3]), vec![]).is_ok());
    for (dims, n) in [
        (vec![2, 3], 23),
        (vec![2, 3], 25),
        (vec![2, 3], 0),
        (vec![], 0),
        (vec![], 8),
    ] {
        let e = Tensor::new(d(dims.clone()), vec![0; n]).unwrap_err();
        assert!(e.to_string().contains("bytes"), "{dims:?} {n}: {e}");
    }
    assert!(Tensor::new(d(vec![-1, 3]), vec![0; 12]).is_err());
    assert!(Tensor::new(d(vec![-2]), vec![0; 4]).is_err());
    let d16 = TensorDesc::new(DataType::FLOAT16, Shape::new(vec![3]));
    assert!(Tensor::new(d16.clone(), vec![0; 6]).is_ok());
    assert!(Tensor::new(d16, vec![0; 12]).is_err());
    // from_values validates the shape and the count.
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![3]).is_err());
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![-3]).is_err());
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![-1]).is_err());
    assert!(Tensor::from_values::<f32>(&[], vec![0]).is_ok());
    // Little-endian, row-major bytes.
    let t = Tensor::from_values(&[1i32, 256], vec![2]).unwrap();
    assert_eq!(&t.data[..], &[1, 0, 0, 0, 0, 1, 0, 0]);
}

fn values_round_trip<T: Element + PartialEq + std::fmt::Debug>(vals: &[T]) {
    let t = Tensor::from_values(vals, vec![vals.len() as i64]).unwrap();
    assert_eq!(t.desc.dtype, T::DTYPE);
    assert_eq!(t.desc.shape.dims(), &[vals.len() as i64]);
    assert_eq!(t.data.len(), std::mem::size_of_val(vals));
    assert_eq!(T::DTYPE.size(), Some(std::mem::size_of::<T>()));
    assert_eq!(t.values::<T>().unwrap(), vals);
    // 2-D as well.
    if vals.len().is_multiple_of(2) {
        let t2 = Tensor::from_values(vals, vec![2, vals.len() as i64 / 2]).unwrap();
        assert_eq!(t2.values::<T>().unwrap(), vals);
    }
    let s = Tensor::scalar(vals[0]);
    assert_eq!(s.desc.shape.rank(), Some(0));
    assert_eq!(s.values::<T>().unwrap(), vec![vals[0]]);
}

#[test]
fn tensor_values_round_trip_every_element_type() {
    use half::{bf16, f16};
    values_round_trip(&[
        0.0f32,
        -1.5,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        -0.0,
    ]);
    values_round_trip(&[0.1f64, -2.5, f64::MAX, f64::NEG_INFINITY]);
    values_round_trip(&[i8::MIN, -1, 0, i8::MAX]);
    values_round_trip(&[i16::MIN, -1, 0, i16::MAX]);
    values_round_trip(&[i32::MIN, -1, 0, i32::MAX]);
    values_round_trip(&[i64::MIN, -1, 0, i64::MAX]);
    values_round_trip(&[0u8, 1, 128, u8::MAX]);
    values_round_trip(&[0u16, 1, 40000, u16::MAX]);
    values_round_trip(&[0u32, 1, 3_000_000_000, u32::MAX]);
    values_round_trip(&[0u64, 1, 1 << 63, u64::MAX]);
    values_round_trip(&[
        f16::from_f32(1.5),
        f16::from_f32(-0.25),
        f16::MAX,
        f16::INFINITY,
    ]);
    values_round_trip(&[
        bf16::from_f32(1.5),
        bf16::from_f32(-3.0),
        bf16::MAX,
        bf16::NEG_INFINITY,
    ]);
    values_round_trip(&[true, false, true, true]);
    // The wrong element type is a type error.
    let t = Tensor::from_values(&[1i32, 2], vec![2]).unwrap();
    assert!(matches!(t.values::<f32>(), Err(Error::Type(_))));
    assert!(matches!(t.values::<i64>(), Err(Error::Type(_))));
}

#[test]
fn tensor_to_i64_and_f64() {
    let v = Tensor::from_values(&[-3i8, 4], vec![2]).unwrap();
    assert_eq!(v.to_i64_vec().unwrap(), vec![-3, 4]);
    assert_eq!(v.to_f64_vec().unwrap(), vec![-3.0, 4.0]);
    assert_eq!(
        Tensor::from_values(&[-3i16, 4], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![-3, 4]
    );
    assert_eq!(
        Tensor::from_values(&[-3i32, 4], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![-3, 4]
    );
    assert_eq!(
        Tensor::from_values(&[i64::MIN, i64::MAX], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![i64::MIN, i64::MAX]
    );
    assert_eq!(
        Tensor::from_values(&[200u8], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![200]
    );
    assert_eq!(
        Tensor::from_values(&[60000u16], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![60000]
    );
    assert_eq!(
        Tensor::from_values(&[u32::MAX], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![u32::MAX as i64]
    );
    assert_eq!(
        Tensor::from_values(&[7u64], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![7]
    );
    assert_eq!(
        Tensor::from_values(&[true, false], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![1, 0]
    );
    assert_eq!(
        Tensor::from_values(&[true, false], vec![2])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![1.0, 0.0]
    );
    let f = Tensor::from_values(&[1.5f32, -2.0], vec![2]).unwrap();
    assert_eq!(f.to_f64_vec().unwrap(), vec![1.5, -2.0]);
    assert!(matches!(f.to_i64_vec(), Err(Error::Type(_))));
    assert_eq!(
        Tensor::from_values(&[0.1f64], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![0.1]
    );
    assert_eq!(
        Tensor::from_values(&[half::f16::from_f32(0.5)], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![0.5]
    );
    assert_eq!(
        Tensor::from_values(&[half::bf16::from_f32(-4.0)], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![-4.0]
    );
    // String tensors hold GE's layout (es_core::strings); raw bytes that are not one are refused.
    assert!(Tensor::new(
        TensorDesc::new(DataType::STRING, Shape::new(vec![1])),
        vec![1, 2, 3],
    )
    .is_err());
    let s = Tensor::from_strings(&["abc"], vec![1]).unwrap();
    assert!(s.to_i64_vec().is_err());
    assert!(s.to_f64_vec().is_err());
}

#[test]
fn tensor_desc_defaults() {
    let d = TensorDesc::new(DataType::INT32, Shape::new(vec![4]));
    assert_eq!(d.format, Format::ND);
    assert_eq!(d.origin_format, Format::ND);
    assert_eq!(d.origin_shape, d.shape);
    let d = d.with_format(Format::NHWC);
    assert_eq!((d.format, d.origin_format), (Format::NHWC, Format::NHWC));
    let mut d = TensorDesc::default();
    assert_eq!(d.dtype, DataType::UNDEFINED);
    assert_eq!(d.shape.rank(), None);
    d.set_shape(Shape::new(vec![1, 2]));
    assert_eq!(d.shape.dims(), &[1, 2]);
    assert_eq!(d.origin_shape.dims(), &[1, 2]);
}

#[test]
fn tensor_with_overflowing_element_count_is_rejected() {
    let desc = TensorDesc::new(DataType::FLOAT, Shape::new(vec![i64::MAX, 2]));
    assert!(Tensor::new(desc, Vec::new()).is_err());
}
