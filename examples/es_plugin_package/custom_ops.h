// Prototypes of two custom operators, as a GE custom op project declares them (op_proto/*.h).

// y = x1 + alpha * x2
REG_OP(ScaledAddCustom)
    .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16}))
    .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16}))
    .ATTR(alpha, Float, 1.0)
    .OP_END_FACTORY_REG(ScaledAddCustom)

// The positive and the negative part of x.
REG_OP(SplitSignCustom)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(pos, TensorType({DT_FLOAT}))
    .OUTPUT(neg, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(SplitSignCustom)
