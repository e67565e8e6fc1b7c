"""ONNX ImageDecoder (opset 20) end to end: the ge-rs operator ImageDecoder through ge.onnx.load
and a Session, on images this file encodes itself with numpy and the standard library (PPM, PGM,
BMP, PNG: decoded exactly), on onnx's own frozen test data (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF,
WebP, made by Pillow: every pixel equal to Pillow's), with the three pixel formats (BGR reversed,
Grayscale Pillow's ITU-R 601-2 luma), and the errors for bytes that are no image."""

import struct
import zlib

import numpy as np
import pytest

pytest.importorskip("onnx")

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from onnx_harness import graph_model, run_graph  # noqa: E402

U8 = TensorProto.UINT8


def decoder_model(pixel_format=None):
    attrs = {} if pixel_format is None else {"pixel_format": pixel_format}
    node = helper.make_node("ImageDecoder", ["data"], ["image"], **attrs)
    return graph_model([node], [helper.make_tensor_value_info("data", U8, [None])],
                       [helper.make_tensor_value_info("image", U8, [None, None, None])], opsets=[("", 20)])


def decode(data, pixel_format=None, mode=None):
    g = ge.onnx.load(decoder_model(pixel_format).SerializeToString())
    (out,) = run_graph(g, [np.frombuffer(bytes(data), dtype=np.uint8)], mode)
    assert out.dtype == np.uint8
    return out


def luma(rgb):
    """Pillow's convert('L'): (19595 R + 38470 G + 7471 B + 0x8000) >> 16."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)[..., None]


def image(h=6, w=7, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


# ---------------------------------------------------------------------------------------------
# Encoders (numpy and the standard library only)


def ppm(rgb):
    h, w, _ = rgb.shape
    return b"P6\n%d %d\n255\n" % (w, h) + rgb.tobytes()


def pgm(gray):
    h, w = gray.shape
    return b"P5\n%d %d\n255\n" % (w, h) + gray.tobytes()


def bmp(rgb):
    """A 24-bit BI_RGB BMP: rows bottom-up, BGR, each padded to 4 bytes."""
    h, w, _ = rgb.shape
    pad = (-3 * w) % 4
    rows = b"".join(rgb[y, :, ::-1].tobytes() + b"\0" * pad for y in range(h - 1, -1, -1))
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info) + len(rows), 0, 0, 14 + len(info)) + info + rows


def png(pixels):
    """An 8-bit PNG of a [H, W] (gray), [H, W, 3] (RGB) or [H, W, 4] (RGBA) array, filter 0."""
    color = 0 if pixels.ndim == 2 else {3: 2, 4: 6}[pixels.shape[2]]
    h, w = pixels.shape[:2]
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------
# Decoding


@pytest.mark.parametrize("encode", [ppm, bmp, png], ids=["ppm", "bmp", "png"])
def test_lossless_files_decode_exactly_in_each_pixel_format(encode):
    rgb = image()
    data = encode(rgb)
    for mode in ("on", "off"):
        np.testing.assert_array_equal(decode(data, mode=mode), rgb)
        np.testing.assert_array_equal(decode(data, "RGB", mode), rgb)
        np.testing.assert_array_equal(decode(data, "BGR", mode), rgb[:, :, ::-1])
        gray = decode(data, "Grayscale", mode)
        assert gray.shape == (6, 7, 1)
        np.testing.assert_array_equal(gray, luma(rgb))


def test_grayscale_is_pillows_luma_rounding():
    # Pure colours and mid-tones where the rounding of the 16-bit weights decides the level.
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]],
                    [[1, 1, 1], [128, 64, 32], [3, 200, 77], [10, 10, 250]]], dtype=np.uint8)
    gray = decode(png(rgb), "Grayscale")[..., 0]
    assert gray[0].tolist() == [76, 150, 29, 255]
    exact = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    assert np.abs(gray - exact).max() <= 0.5 + 1e-3
    np.testing.assert_array_equal(gray, luma(rgb)[..., 0])


def test_gray_files_keep_their_values_and_repeat_them_for_rgb():
    gray = np.arange(35, dtype=np.uint8).reshape(5, 7) * 7
    for data in (pgm(gray), png(gray)):
        np.testing.assert_array_equal(decode(data, "Grayscale")[..., 0], gray)
        np.testing.assert_array_equal(decode(data), np.repeat(gray[..., None], 3, axis=2))
        np.testing.assert_array_equal(decode(data, "BGR"), np.repeat(gray[..., None], 3, axis=2))


def test_alpha_is_dropped():
    rgba = np.concatenate([image(3, 4, 1), np.full((3, 4, 1), 7, np.uint8)], axis=2)
    np.testing.assert_array_equal(decode(png(rgba)), rgba[..., :3])


def test_one_graph_decodes_images_of_different_sizes():
    g = ge.onnx.load(decoder_model("BGR").SerializeToString())
    s = ge.session.Session({"ge.graphMode": "on"})
    s.add_graph(0, g)
    for h, w in ((2, 3), (9, 5), (1, 1)):
        rgb = image(h, w, h * w)
        (out,) = s.run_graph(0, [np.frombuffer(ppm(rgb), np.uint8)])
        np.testing.assert_array_equal(np.asarray(out.numpy()), rgb[:, :, ::-1])


FROZEN = ["bmp_rgb", "jpeg2k_rgb", "jpeg_bgr", "jpeg_grayscale", "jpeg_rgb", "png_rgb", "pnm_rgb", "tiff_rgb",
          "webp_rgb"]


@pytest.mark.parametrize("case", FROZEN)
def test_onnx_test_data_matches_pillow_exactly(case):
    """onnx's frozen ImageDecoder data (encoded and decoded by Pillow): JPEG with libjpeg-turbo's
    inverse DCT and upsampling, lossy WebP, lossless JPEG 2000, TIFF; every pixel equal."""
    from onnx.backend.test.case.node import _image_decoder_data as frozen

    d = getattr(frozen, "image_decoder_decode_" + case)
    fmt = {"bgr": "BGR", "grayscale": "Grayscale"}.get(case.split("_")[-1], "RGB")
    got = decode(d.data, fmt)
    assert got.shape == d.output.shape
    np.testing.assert_array_equal(got, d.output)


def test_ge_and_air_files_keep_the_operator_and_onnx_export_refuses_it(tmp_path):
    g = ge.onnx.load(decoder_model("Grayscale").SerializeToString())
    rgb = image(4, 3, 5)
    feeds = [np.frombuffer(bmp(rgb), np.uint8)]
    g.save(str(tmp_path / "g.ge"))
    (out,) = run_graph(ge.graph.Graph.load(str(tmp_path / "g.ge")), feeds)
    np.testing.assert_array_equal(out, luma(rgb))
    g.save_to_air(str(tmp_path / "g.air"))
    (out,) = run_graph(ge.graph.Graph.load_from_air(str(tmp_path / "g.air")), feeds)
    np.testing.assert_array_equal(out, luma(rgb))
    # The exporter writes opset 18; ImageDecoder is opset 20.
    with pytest.raises(ge.GeError, match="without an ONNX exporter: ImageDecoder"):
        ge.onnx.to_bytes(g)


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("data, words", [
    (b"hello, not an image", "not an image this decoder knows"),
    (png(image())[:40], "PNG data could not be decoded"),
    (b"\xff\xd8\xff\xdb\x00\x01", "JPEG data could not be decoded"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00", "JPEG 2000 data could not be decoded"),
    (bmp(image())[:70], "BMP data could not be decoded"),
    (b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "not supported: ImageDecoder on a GIF file"),
])
def test_bytes_that_are_no_image_are_errors_naming_the_problem(data, words):
    with pytest.raises(ge.GeError, match=words):
        decode(data)


def test_an_empty_stream_is_an_error():
    g = ge.onnx.load(decoder_model().SerializeToString())
    with pytest.raises(ge.GeError, match="encoded_stream is empty"):
        run_graph(g, [np.zeros(0, np.uint8)])


def test_every_prefix_of_a_file_is_an_image_or_an_error():
    data = ppm(image(3, 3))
    for n in range(0, len(data), 3):
        try:
            decode(data[:n] if n else b"\0")
        except ge.GeError:
            pass


def test_import_refuses_a_bad_pixel_format_and_a_non_uint8_stream():
    with pytest.raises(ge.GeError, match='pixel_format must be RGB, BGR or Grayscale, got "rgb"'):
        ge.onnx.load(decoder_model("rgb").SerializeToString())
    node = helper.make_node("ImageDecoder", ["data"], ["image"])
    m = graph_model([node], [helper.make_tensor_value_info("data", TensorProto.INT8, [None])],
                    [helper.make_tensor_value_info("image", U8, None)], opsets=[("", 20)])
    with pytest.raises(ge.GeError, match="encoded_stream must be uint8"):
        ge.onnx.load(m.SerializeToString())
