//! Operator arithmetic shared by every layer: shape inference (`infer`), the CPU kernels
//! (ge-runtime), ONNX translation and export (ge-onnx) call these functions rather than each
//! writing its own copy.
//!
//! - [`window`]: output sizes of convolution and pooling windows (dilation, stride, explicit
//!   pads, floor or ceil mode) and the pads of the SAME/VALID padding modes;
//! - [`broadcast`]: numpy broadcasting of two shapes (known dims, or dims that may be unknown);
//! - [`einsum`]: einsum equations parsed into terms, the implicit output made explicit;
//! - [`slice`]: TensorFlow's StridedSlice: canonical begin/end per dim and the walk of the slice
//!   spec with its ellipsis, new-axis and shrink-axis masks;
//! - [`attr`]: typed attribute getters with defaults, one generic over the attribute's type;
//! - [`size`]: checked element counts and byte sizes of shapes (errors naming the op and shape).
//!
//! Errors are small values the callers turn into their own error type and message.

pub mod attr;
pub mod broadcast;
pub mod einsum;
pub mod size;
pub mod slice;
pub mod window;

pub use attr::{attr_or, FromAttr, WrongAttrType};
pub use broadcast::{broadcast_dims, BroadcastDim, Mismatch};
pub use einsum::{parse_einsum, Einsum, EinsumTerm};
pub use size::{byte_size, checked_product, element_count, MAX_BYTES};
pub use slice::{slice_spec, spread_over_axes, strided_len, strided_range, SliceMasks, SpecDim};
pub use window::{
    conv_out_size, same_out, same_pads, same_pads_usize, split_pads, window_out, window_out_usize,
    Padding, SizeError,
};
