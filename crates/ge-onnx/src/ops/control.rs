//! Control flow (If, Loop, Scan), recurrent layers and attention.

use crate::translate::Registry;

pub(crate) fn register(_r: &mut Registry) {}
