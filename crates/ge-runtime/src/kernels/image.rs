//! The kernel of the ge-rs operator ImageDecoder (ONNX's): an encoded image file, as a 1-D
//! uint8 tensor of its bytes, decoded into an [H, W, C] uint8 image.
//!
//! JPEG goes through `libjpeg-turbo-rs` (libjpeg-turbo's decoder in Rust: its integer inverse
//! DCT, "fancy" chroma upsampling and colour tables, so the pixels are those of Pillow's
//! libjpeg-turbo, byte for byte), JPEG 2000 (a JP2 file or a raw codestream) through
//! `hayro-jpeg2000`, BMP, PNG, PNM, TIFF and WebP through the `image` crate; the format is told
//! by the file's signature. Pixels are what Pillow gives (ONNX's reference): RGB with any alpha
//! dropped and gray replicated, BGR its reverse, Grayscale a gray image's own values and a
//! colour image's ITU-R 601-2 luma with Pillow's rounding ([`luma`]).

use super::common::str_attr;
use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::infer::image::PixelFormat;
use ndarray::{ArrayD, IxDyn};

pub(super) const KERNELS: Kernels = &[(&["ImageDecoder"], image_decoder_factory)];

/// The most bytes a decoded image may take (the `image` crate's default allocation limit).
const MAX_PIXEL_BYTES: u64 = 512 * 1024 * 1024;

/// ImageDecoder: `pixel_format` read once; the input's bytes decoded on each run.
fn image_decoder_factory(info: &NodeInfo) -> Result<Kernel> {
    let f = str_attr(info, "pixel_format", "RGB")?;
    let pf = PixelFormat::parse(&f).ok_or_else(|| Error::kernel(PixelFormat::bad(&f)))?;
    Ok(Box::new(move |inputs| {
        let bytes = match input(inputs, 0)? {
            Value::U8(a) => a,
            v => {
                return Err(Error::kernel(format!(
                    "encoded_stream must be a uint8 tensor, got {}",
                    v.dtype()
                )))
            }
        };
        let data: Vec<u8> = match bytes.as_slice() {
            Some(s) => s.to_vec(),
            None => bytes.iter().copied().collect(),
        };
        Ok(vec![Value::U8(decode(&data, pf)?)])
    }))
}

/// A decoded image in 8-bit samples, `channels` interleaved a pixel (1: gray, 3: RGB).
struct Pixels {
    width: usize,
    height: usize,
    channels: usize,
    data: Vec<u8>,
}

/// The image encoded in `data`, as [H, W, C] in `pf`'s channels.
pub(crate) fn decode(data: &[u8], pf: PixelFormat) -> Result<ArrayD<u8>> {
    if data.is_empty() {
        return Err(Error::kernel("encoded_stream is empty: no image to decode"));
    }
    // The decoders are third-party code reading untrusted bytes: a panic in one is this
    // node's error, not the process's.
    let px = std::panic::catch_unwind(|| {
        if data.starts_with(b"\xff\xd8\xff") {
            decode_jpeg(data)
        } else if is_jpeg2000(data) {
            decode_jpeg2000(data)
        } else {
            decode_common(data)
        }
    })
    .unwrap_or_else(|_| Err(Error::kernel("the image decoder failed on these bytes")))?;
    let Pixels {
        width,
        height,
        channels,
        data,
    } = px;
    let out: Vec<u8> = match (pf, channels) {
        (PixelFormat::Grayscale, 1) | (PixelFormat::Rgb, 3) => data,
        (PixelFormat::Grayscale, _) => data.chunks_exact(3).map(luma).collect(),
        (PixelFormat::Rgb, _) => data.iter().flat_map(|&g| [g; 3]).collect(),
        (PixelFormat::Bgr, 1) => data.iter().flat_map(|&g| [g; 3]).collect(),
        (PixelFormat::Bgr, _) => data
            .chunks_exact(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect(),
    };
    ArrayD::from_shape_vec(IxDyn(&[height, width, pf.channels()]), out)
        .map_err(|e| Error::kernel(format!("internal error: decoded image: {e}")))
}

/// Pillow's ITU-R 601-2 luma of an RGB pixel (`convert('L')`): 16-bit fixed-point weights
/// 0.299, 0.587 and 0.114, rounded half up.
fn luma(p: &[u8]) -> u8 {
    let [r, g, b] = [p[0], p[1], p[2]].map(u32::from);
    ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16) as u8
}

/// A JP2 file (its signature box) or a raw JPEG 2000 codestream (SOC then SIZ).
fn is_jpeg2000(data: &[u8]) -> bool {
    data.starts_with(b"\x00\x00\x00\x0cjP  \r\n\x87\n") || data.starts_with(b"\xff\x4f\xff\x51")
}

/// Checks that a `width` x `height` image of `channels` 8-bit samples stays under
/// [`MAX_PIXEL_BYTES`].
fn check_size(width: u32, height: u32, channels: usize, what: &str) -> Result<()> {
    let n = u64::from(width) * u64::from(height) * channels as u64;
    if n > MAX_PIXEL_BYTES {
        return Err(Error::kernel(format!(
            "{what} image of {width} x {height} pixels is over the decoder's limit of \
             {MAX_PIXEL_BYTES} bytes"
        )));
    }
    Ok(())
}

/// JPEG through `libjpeg-turbo-rs`: gray when the file has one component, else RGB (what
/// libjpeg gives Pillow).
fn decode_jpeg(data: &[u8]) -> Result<Pixels> {
    use libjpeg_turbo_rs::{DecodeLimits, Decoder, PixelFormat as Jpf};
    let bad = |e: libjpeg_turbo_rs::JpegError| {
        Error::kernel(format!("the JPEG data could not be decoded: {e}"))
    };
    let limits = DecodeLimits {
        max_memory: Some(2 * MAX_PIXEL_BYTES),
        ..DecodeLimits::default()
    };
    let mut dec = Decoder::new_with_limits(data, limits).map_err(bad)?;
    let h = dec.header();
    let (channels, format) = match h.components.len() {
        1 => (1, Jpf::Grayscale),
        _ => (3, Jpf::Rgb),
    };
    check_size(u32::from(h.width), u32::from(h.height), channels, "JPEG")?;
    dec.set_output_format(format);
    let img = dec.decode_image().map_err(bad)?;
    if img.data.len() != img.width * img.height * channels {
        return Err(Error::kernel(format!(
            "the JPEG data decoded to {} bytes, not {} x {} x {channels}",
            img.data.len(),
            img.width,
            img.height
        )));
    }
    Ok(Pixels {
        width: img.width,
        height: img.height,
        channels,
        data: img.data,
    })
}

/// BMP, PNG, PNM, TIFF or WebP through the `image` crate: RGB, or gray when the file
/// has no colour.
fn decode_common(data: &[u8]) -> Result<Pixels> {
    let format = ::image::guess_format(data).map_err(|_| {
        let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Error::kernel(format!(
            "encoded_stream is not an image this decoder knows (BMP, JPEG, JPEG 2000, PNG, PNM, \
             TIFF, WebP): it starts with bytes {}",
            head.join(" ")
        ))
    })?;
    let name = format!("{format:?}").to_uppercase();
    let img = ::image::load_from_memory_with_format(data, format).map_err(|e| match e {
        ::image::ImageError::Unsupported(u) => {
            Error::unsupported(format!("ImageDecoder on a {name} file: {u}"))
        }
        ::image::ImageError::Limits(l) => Error::kernel(format!("{name} image: {l}")),
        e => Error::kernel(format!("the {name} data could not be decoded: {e}")),
    })?;
    let (width, height) = (img.width() as usize, img.height() as usize);
    let (channels, data) = if img.color().has_color() {
        (3, img.into_rgb8().into_raw())
    } else {
        (1, img.into_luma8().into_raw())
    };
    Ok(Pixels {
        width,
        height,
        channels,
        data,
    })
}

/// JPEG 2000 through `hayro-jpeg2000`: gray or RGB (an ICC profile's channels taken as they
/// are, as Pillow does), alpha dropped.
fn decode_jpeg2000(data: &[u8]) -> Result<Pixels> {
    use hayro_jpeg2000::{ColorSpace, DecodeSettings, DecoderContext, Image};
    let bad = |e: hayro_jpeg2000::error::DecodeError| {
        Error::kernel(format!("the JPEG 2000 data could not be decoded: {e}"))
    };
    let img = Image::new(data, &DecodeSettings::default()).map_err(bad)?;
    let color = match img.color_space() {
        ColorSpace::Gray => 1,
        ColorSpace::RGB => 3,
        ColorSpace::Icc { num_channels, .. } if matches!(num_channels, 1 | 3) => {
            *num_channels as usize
        }
        cs => {
            return Err(Error::unsupported(format!(
                "ImageDecoder on a JPEG 2000 image in colour space {cs:?} (gray and RGB are \
                 decoded)"
            )))
        }
    };
    let stride = color + usize::from(img.has_alpha());
    let (width, height) = (img.width(), img.height());
    check_size(width, height, stride, "JPEG 2000")?;
    let mut ctx = DecoderContext::default();
    let samples = img.decode(&mut ctx).map_err(bad)?.data_u8();
    let (w, h) = (width as usize, height as usize);
    if samples.len() != w * h * stride {
        return Err(Error::kernel(format!(
            "the JPEG 2000 data decoded to {} samples, not {w} x {h} x {stride}",
            samples.len()
        )));
    }
    let data = if stride == color {
        samples
    } else {
        samples
            .chunks_exact(stride)
            .flat_map(|p| p[..color].iter().copied())
            .collect()
    };
    Ok(Pixels {
        width: w,
        height: h,
        channels: color,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::image::{DynamicImage, ImageFormat, RgbImage};
    use std::io::Cursor;

    /// A 5 x 4 RGB test image with every channel varying.
    fn rgb() -> RgbImage {
        RgbImage::from_fn(5, 4, |x, y| {
            ::image::Rgb([(x * 50) as u8, (y * 60 + 7) as u8, (x * y * 11 + 3) as u8])
        })
    }

    fn encode(img: DynamicImage, f: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, f).unwrap();
        out.into_inner()
    }

    #[test]
    fn lossless_formats_decode_exactly() {
        let src = rgb();
        for f in [
            ImageFormat::Png,
            ImageFormat::Bmp,
            ImageFormat::Pnm,
            ImageFormat::Tiff,
        ] {
            let bytes = encode(DynamicImage::ImageRgb8(src.clone()), f);
            let out = decode(&bytes, PixelFormat::Rgb).unwrap();
            assert_eq!(out.shape(), &[4, 5, 3], "{f:?}");
            assert_eq!(out.as_slice().unwrap(), src.as_raw().as_slice(), "{f:?}");
            let bgr = decode(&bytes, PixelFormat::Bgr).unwrap();
            let flipped: Vec<u8> = src
                .as_raw()
                .chunks(3)
                .flat_map(|p| [p[2], p[1], p[0]])
                .collect();
            assert_eq!(bgr.as_slice().unwrap(), flipped.as_slice(), "{f:?}");
        }
    }

    #[test]
    fn grayscale_is_pillows_luma() {
        let src = rgb();
        let bytes = encode(DynamicImage::ImageRgb8(src.clone()), ImageFormat::Png);
        let out = decode(&bytes, PixelFormat::Grayscale).unwrap();
        assert_eq!(out.shape(), &[4, 5, 1]);
        for (p, &l) in src.pixels().zip(out.iter()) {
            let [r, g, b] = p.0.map(f64::from);
            // Pillow's 16-bit weights round the float luma to within half a level.
            assert!((0.299 * r + 0.587 * g + 0.114 * b - f64::from(l)).abs() <= 0.5 + 1e-3);
        }
        // Pure colours: Pillow's values.
        assert_eq!(luma(&[255, 0, 0]), 76);
        assert_eq!(luma(&[0, 255, 0]), 150);
        assert_eq!(luma(&[0, 0, 255]), 29);
        assert_eq!(luma(&[255, 255, 255]), 255);
    }

    #[test]
    fn gray_files_keep_their_values_and_replicate_to_rgb() {
        let g = ::image::GrayImage::from_fn(3, 2, |x, y| ::image::Luma([(x * 40 + y * 90) as u8]));
        let bytes = encode(DynamicImage::ImageLuma8(g.clone()), ImageFormat::Png);
        let out = decode(&bytes, PixelFormat::Grayscale).unwrap();
        assert_eq!(out.as_slice().unwrap(), g.as_raw().as_slice());
        let rgb = decode(&bytes, PixelFormat::Rgb).unwrap();
        assert_eq!(rgb.shape(), &[2, 3, 3]);
        for (p, &v) in rgb.as_slice().unwrap().chunks(3).zip(g.as_raw()) {
            assert_eq!(p, &[v, v, v]);
        }
    }

    #[test]
    fn jpeg_decodes_near_its_source_and_gray_from_its_rgb() {
        use libjpeg_turbo_rs::{compress, PixelFormat as Jpf, Subsampling};
        let src = rgb();
        let bytes = compress(src.as_raw(), 5, 4, Jpf::Rgb, 95, Subsampling::S444).unwrap();
        let out = decode(&bytes, PixelFormat::Rgb).unwrap();
        assert_eq!(out.shape(), &[4, 5, 3]);
        for (&a, &b) in out.iter().zip(src.as_raw()) {
            assert!((i32::from(a) - i32::from(b)).abs() <= 8, "{a} vs {b}");
        }
        let gray = decode(&bytes, PixelFormat::Grayscale).unwrap();
        let want: Vec<u8> = out.as_slice().unwrap().chunks(3).map(luma).collect();
        assert_eq!(gray.as_slice().unwrap(), want.as_slice());
        // A one-component JPEG is gray: its values, replicated for RGB.
        let g: Vec<u8> = (0..20).map(|i| (i * 12) as u8).collect();
        let bytes = compress(&g, 5, 4, Jpf::Grayscale, 100, Subsampling::S444).unwrap();
        let one = decode(&bytes, PixelFormat::Grayscale).unwrap();
        let three = decode(&bytes, PixelFormat::Bgr).unwrap();
        for (&v, p) in one.iter().zip(three.as_slice().unwrap().chunks(3)) {
            assert_eq!(p, &[v, v, v]);
        }
    }

    #[test]
    fn alpha_is_dropped() {
        let src =
            ::image::RgbaImage::from_fn(2, 2, |x, y| ::image::Rgba([x as u8, y as u8, 9, 17]));
        let bytes = encode(DynamicImage::ImageRgba8(src), ImageFormat::Png);
        let out = decode(&bytes, PixelFormat::Rgb).unwrap();
        assert_eq!(
            out.as_slice().unwrap(),
            &[0, 0, 9, 1, 0, 9, 0, 1, 9, 1, 1, 9]
        );
    }

    #[test]
    fn bad_bytes_are_errors_naming_the_problem() {
        let msg = |d: &[u8]| decode(d, PixelFormat::Rgb).unwrap_err().to_string();
        assert!(msg(&[]).contains("empty"));
        let m = msg(b"hello, not an image");
        assert!(
            m.contains("not an image") && m.contains("68 65 6c 6c"),
            "{m}"
        );
        // A PNG cut short, a JPEG with only its start marker, a JP2 box with nothing after.
        let png = encode(DynamicImage::ImageRgb8(rgb()), ImageFormat::Png);
        let m = msg(&png[..png.len() / 2]);
        assert!(m.contains("PNG data could not be decoded"), "{m}");
        let m = msg(&[0xff, 0xd8, 0xff, 0xdb, 0, 1]);
        assert!(m.contains("JPEG data could not be decoded"), "{m}");
        let m = msg(b"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00");
        assert!(m.contains("JPEG 2000 data could not be decoded"), "{m}");
        // Every prefix of a valid file is an error or an image, never a panic.
        for n in 0..png.len() {
            let _ = decode(&png[..n], PixelFormat::Grayscale);
        }
    }

    #[test]
    fn a_gif_is_not_supported() {
        let m = decode(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", PixelFormat::Rgb)
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with("not supported: ImageDecoder on a GIF file"),
            "{m}"
        );
    }
}
