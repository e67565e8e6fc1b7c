//! Element-wise math, reductions and activations that need more than the table's one-to-one form.

use crate::translate::Registry;

pub(crate) fn register(_r: &mut Registry) {}
