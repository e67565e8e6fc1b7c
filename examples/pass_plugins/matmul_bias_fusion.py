"""A pass plugin: MatMulV2(a, b) + bias -> MatMulV2(a, b, bias).

Put this folder on ``ASCEND_GE_PY_PASS_PATH`` (or install a package that declares it under the
``ge.passes.plugins`` entry point); ``GeApi.ge_initialize()`` loads it and every session compile
runs it, before shape inference. The fused MatMulV2 adds its optional 1-D ``bias`` input itself::

        a    b                    a    b    bias
         \\  /                      \\   |   /
        MatMulV2   bias    ==>      MatMulV2
            \\      /
              Add
"""

from ge.es.all import Add, MatMulV2
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="MatMulBiasFusion", stage=PassStage.AFTER_INFER_SHAPE)
class MatMulBiasFusion(PatternFusionPass):
    @pattern
    def matmul_add(self, inputs):
        return Add(MatMulV2(inputs[0], inputs[1]), inputs[2])

    def meet_requirements(self, match_result):
        """Only a 1-D bias as long as the product's last dim, and no bias yet."""
        mm = next(n for n in match_result.get_matched_nodes() if n.type == "MatMulV2")
        bias = match_result.get_captured_tensor(2)
        bias_shape = bias.node.get_output_desc(bias.index).get_shape()
        out_shape = mm.get_output_desc(0).get_shape()
        return len(bias_shape) == 1 and bias_shape[0] == out_shape[-1] >= 0

    def replacement(self, inputs, match_result):
        mm = next(n for n in match_result.get_matched_nodes() if n.type == "MatMulV2")
        return MatMulV2(inputs[0], inputs[1], inputs[2],
                        transpose_x1=mm.get_attr("transpose_x1"), transpose_x2=mm.get_attr("transpose_x2"))
