//! String tensors (`DT_STRING`) in GE's layout.
//!
//! A string tensor's data is what GE's `Tensor::SetData(std::vector<std::string>)` writes: one
//! `StringHead {int64 addr; int64 len}` record per element (little-endian), then each element's
//! bytes followed by a `'\0'`; `addr` is the offset of the element's bytes from the start of the
//! data. So `.ge` files, `.air` models and ONNX exports carry strings as GE lays them out, and a
//! [`Tensor`] of strings stays one byte buffer (the records are its arena's index).

use crate::error::{Error, Result};
use crate::types::{DataType, Shape, Tensor, TensorDesc};
use std::sync::Arc;

/// The size of one `StringHead` record.
const HEAD: usize = 16;

/// GE's layout of `strings`.
pub fn encode<S: AsRef<[u8]>>(strings: &[S]) -> Vec<u8> {
    let n = strings.len();
    let body: usize = strings.iter().map(|s| s.as_ref().len() + 1).sum();
    let mut out = Vec::with_capacity(n * HEAD + body);
    let mut addr = n * HEAD;
    for s in strings {
        let len = s.as_ref().len();
        out.extend_from_slice(&(addr as i64).to_le_bytes());
        out.extend_from_slice(&(len as i64).to_le_bytes());
        addr += len + 1;
    }
    for s in strings {
        out.extend_from_slice(s.as_ref());
        out.push(0);
    }
    out
}

/// The `n` elements of GE-layout `data`, as byte slices; an error names what is malformed.
pub fn decode(data: &[u8], n: usize) -> Result<Vec<&[u8]>> {
    let heads = n
        .checked_mul(HEAD)
        .filter(|&h| h <= data.len())
        .ok_or_else(|| {
            Error::value(format!(
                "a string tensor of {n} elements needs {n} 16-byte heads, got {} bytes",
                data.len()
            ))
        })?;
    (0..n)
        .map(|i| {
            let field = |k: usize| {
                let b: [u8; 8] = data[i * HEAD + k..i * HEAD + k + 8]
                    .try_into()
                    .unwrap_or([0; 8]);
                i64::from_le_bytes(b)
            };
            let (addr, len) = (field(0), field(8));
            let range = usize::try_from(addr)
                .ok()
                .zip(usize::try_from(len).ok())
                .filter(|&(a, _)| a >= heads)
                .and_then(|(a, l)| Some(a..a.checked_add(l)?))
                .filter(|r| r.end <= data.len());
            range.map(|r| &data[r]).ok_or_else(|| {
                Error::value(format!(
                    "string element {i}: offset {addr} and length {len} do not lie in the \
                     {} bytes after the heads",
                    data.len() - heads
                ))
            })
        })
        .collect()
}

impl Tensor {
    /// A `DT_STRING` tensor of `strings` (row-major) and `shape`.
    pub fn from_strings<S: AsRef<[u8]>>(strings: &[S], shape: Vec<i64>) -> Result<Tensor> {
        Shape::validate(&shape)?;
        let shape = Shape::new(shape);
        let n = crate::opmath::element_count("string tensor", &shape)?;
        if n != Some(strings.len() as i64) {
            return Err(Error::value(format!(
                "a string tensor of shape {shape} needs {} strings, got {}",
                n.map_or("a known number of".to_string(), |n| n.to_string()),
                strings.len()
            )));
        }
        Ok(Tensor {
            desc: TensorDesc::new(DataType::STRING, shape),
            data: Arc::new(encode(strings)),
        })
    }

    /// The elements of a `DT_STRING` tensor as bytes, row-major.
    pub fn string_bytes(&self) -> Result<Vec<&[u8]>> {
        if self.desc.dtype != DataType::STRING {
            return Err(Error::type_err(format!(
                "tensor has dtype {}, not DT_STRING",
                self.desc.dtype
            )));
        }
        let n =
            crate::opmath::element_count("string tensor", &self.desc.shape)?.ok_or_else(|| {
                Error::value(format!(
                    "a string tensor needs a known shape, got {}",
                    self.desc.shape
                ))
            })?;
        decode(&self.data, n as usize)
    }

    /// The elements of a `DT_STRING` tensor as UTF-8 text, row-major; bytes that are not UTF-8
    /// are an error naming the element.
    pub fn strings(&self) -> Result<Vec<String>> {
        self.string_bytes()?
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                String::from_utf8(b.to_vec())
                    .map_err(|e| Error::value(format!("string element {i} is not UTF-8: {e}")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ge_layout_round_trips() {
        let t = Tensor::from_strings(&["ab", "", "héllo"], vec![3]).unwrap();
        // Three 16-byte heads, then "ab\0", "\0", "héllo\0".
        assert_eq!(t.data.len(), 48 + 3 + 1 + 7);
        assert_eq!(&t.data[0..8], &48i64.to_le_bytes());
        assert_eq!(&t.data[8..16], &2i64.to_le_bytes());
        assert_eq!(&t.data[16..24], &51i64.to_le_bytes());
        assert_eq!(&t.data[48..51], b"ab\0");
        assert_eq!(t.strings().unwrap(), vec!["ab", "", "héllo"]);
        let again = Tensor::new(t.desc.clone(), t.data.to_vec()).unwrap();
        assert_eq!(again.strings().unwrap(), t.strings().unwrap());
        assert_eq!(
            Tensor::from_strings::<&str>(&[], vec![0, 2])
                .unwrap()
                .strings()
                .unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn malformed_layouts_and_counts_are_errors() {
        assert!(Tensor::from_strings(&["a"], vec![2]).is_err());
        let desc = TensorDesc::new(DataType::STRING, Shape::new(vec![1]));
        // Too short for the head; an offset into the heads; a length past the end.
        assert!(Tensor::new(desc.clone(), vec![0; 8]).is_err());
        let mut bad = encode(&["abc"]);
        bad[0] = 0;
        assert!(Tensor::new(desc.clone(), bad).is_err());
        let mut bad = encode(&["abc"]);
        bad[8] = 200;
        let e = Tensor::new(desc.clone(), bad).unwrap_err().to_string();
        assert!(e.contains("string element 0"), "{e}");
        let t = Tensor::new(desc, encode(&[vec![0xffu8]])).unwrap();
        assert!(t.strings().unwrap_err().to_string().contains("not UTF-8"));
        assert!(Tensor::scalar(1.0f32).strings().is_err());
    }
}
