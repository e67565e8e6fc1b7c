//! Typed attribute getters: the value of an optional attribute as the type a rule wants, the
//! default when absent, and an error naming the wanted type when the attribute holds another.

use crate::attr::AttrValue;

/// An attribute type a getter can read.
pub trait FromAttr<'a>: Sized {
    /// The attribute type's name as GE spells it ("Int", "ListInt", ...).
    const TYPE: &'static str;
    /// The same in words ("an int", "a list of ints", ...).
    const WORDS: &'static str;
    fn from_attr(v: &'a AttrValue) -> Option<Self>;
}

macro_rules! from_attr {
    ($($t:ty, $ty:literal, $words:literal, $get:ident;)*) => {$(
        impl<'a> FromAttr<'a> for $t {
            const TYPE: &'static str = $ty;
            const WORDS: &'static str = $words;
            fn from_attr(v: &'a AttrValue) -> Option<Self> {
                v.$get()
            }
        }
    )*};
}

from_attr! {
    i64, "Int", "an int", as_int;
    f32, "Float", "a float", as_float;
    bool, "Bool", "a bool", as_bool;
    &'a str, "String", "a string", as_str;
    &'a [i64], "ListInt", "a list of ints", as_list_int;
}

/// An attribute that holds another type than the one read.
#[derive(Clone, Copy, Debug)]
pub struct WrongAttrType<'a> {
    /// The wanted type ([`FromAttr::TYPE`]).
    pub want: &'static str,
    /// The wanted type in words ([`FromAttr::WORDS`]).
    pub words: &'static str,
    /// The value found.
    pub got: &'a AttrValue,
}

/// `v` (an attribute looked up by name) read as `T`, `default` when absent.
pub fn attr_or<'a, T: FromAttr<'a>>(
    v: Option<&'a AttrValue>,
    default: T,
) -> Result<T, WrongAttrType<'a>> {
    match v {
        None => Ok(default),
        Some(v) => T::from_attr(v).ok_or(WrongAttrType {
            want: T::TYPE,
            words: T::WORDS,
            got: v,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_defaults_and_refuses_other_types() {
        let i = AttrValue::Int(3);
        let l = AttrValue::ListInt(vec![1, 2]);
        assert_eq!(attr_or(Some(&i), 0i64).unwrap(), 3);
        assert_eq!(attr_or(None, 7i64).unwrap(), 7);
        assert_eq!(attr_or::<&[i64]>(Some(&l), &[]).unwrap(), &[1, 2]);
        assert_eq!(attr_or(None, "NHWC").unwrap(), "NHWC");
        let e = attr_or(Some(&l), 0i64).unwrap_err();
        assert_eq!((e.want, e.words), ("Int", "an int"));
        assert_eq!(e.got, &l);
        let e = attr_or(Some(&i), false).unwrap_err();
        assert_eq!((e.want, e.words), ("Bool", "a bool"));
        let e = attr_or(Some(&i), 1.0f32).unwrap_err();
        assert_eq!(e.want, "Float");
        assert!(attr_or(Some(&i), "").is_err());
    }
}
