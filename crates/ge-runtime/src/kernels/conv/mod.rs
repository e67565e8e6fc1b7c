//! Convolution kernels: one engine in `nd` (vol2col in cache-sized tiles and one matrix product
//! per tile through `gemm_into`; 2-D convolutions are 3-D ones of depth 1) serves Conv2D,
//! DepthwiseConv2D (each plane convolved directly by the vectorised kernel of `depthwise.rs`), Conv3D, Conv2DTranspose (the adjoint,
//! col2vol) and DeformableConv2D (bilinear columns). The table below registers them; output
//! sizes and SAME pads come from `es_core::opmath`.
//!
//! Convolutions compute f32 and f64 in their own precision, f16 and bf16 in f32 (rounded once at
//! the end), int8 in i64 (giving int32).
//!
//! Layouts are those the shape rules use, decided by `es_core::infer::layout`: x in the format
//! it states (NCHW or NHWC), else in `data_format`'s; a convolution filter in the format it
//! states (NCHW: [out, in/groups, kh, kw]; NHWC: [out, kh, kw, in/groups]; HWCN: [kh, kw,
//! in/groups, out]), else in the one x states, else NCHW. Pads are [top, bottom, left, right].

pub(super) mod nd;

use super::Kernels;

/// Filter dims (out channels, in channels, kh, kw) by the filter's tensor format.
pub(super) use es_core::infer::layout::filter_positions_2d as filter_positions;

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["Conv2D", "DepthwiseConv2D"], nd::conv2d_factory),
    (&["Conv3D"], nd::conv3d_factory),
    (&["Conv2DTranspose"], nd::conv2d_transpose_factory),
    (&["DeformableConv2D"], nd::deformable_conv2d_factory),
];

#[cfg(test)]
mod tests {
    use es_core::opmath::{conv_out_size, same_pads_usize as same_pads};

    #[test]
    fn conv_output_sizes() {
        // 5 wide, kernel 3: 3 (valid), 5 with pads 1/1, 3 with stride 2 and pads 1/1.
        assert_eq!(conv_out_size(5, 3, 1, 1, 0, 0), Some(3));
        assert_eq!(conv_out_size(5, 3, 1, 1, 1, 1), Some(5));
        assert_eq!(conv_out_size(5, 3, 2, 1, 1, 1), Some(3));
        // Dilation 2: effective kernel 5.
        assert_eq!(conv_out_size(5, 3, 1, 2, 0, 0), Some(1));
        assert_eq!(conv_out_size(4, 3, 1, 2, 0, 0), None);
        assert_eq!(conv_out_size(5, 0, 1, 1, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 0, 1, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 1, usize::MAX, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 1, 1, usize::MAX, 1), None);
        // SAME: ceil(size / stride) outputs, the odd pad at the end.
        assert_eq!(same_pads(5, 3, 1, 1), Some((1, 1)));
        assert_eq!(same_pads(6, 3, 2, 1), Some((0, 1)));
        assert_eq!(same_pads(5, 1, 2, 1), Some((0, 0)));
    }
}
