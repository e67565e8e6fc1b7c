//! Helpers shared by the integration tests.

use es_core::{DataType, Format, GraphBuilder, OutPort, Shape};

/// Input 0 of `b`: a float Data node of shape [2].
pub fn float_input(b: &mut GraphBuilder) -> OutPort {
    b.create_input(
        0,
        None,
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::new(vec![2]),
    )
    .unwrap()
}
