"""What torch.compile hands Inductor, for the kplay.torch tests that need no device: the forward
and backward graphs AOTAutograd makes (with Inductor's decompositions, so a decomposed kplay op
is gone from them), traced on meta tensors. Imported by test_torch_ops.py and test_gated_torch.py;
needs torch."""
import torch


def compiled_graphs(fn, *inputs, backward=True):
    """The call_function targets of each graph AOTAutograd produced for fn(*inputs)."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._inductor.decomposition import select_decomp_table

    graphs = []

    def keep(gm, _):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return make_boxed_func(gm.forward)

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep, bw_compiler=keep,
                                     decompositions=select_decomp_table())

    torch._dynamo.reset()
    out = torch.compile(fn, fullgraph=True, backend=backend)(*inputs)
    if backward:
        out.sum().backward()
    return graphs
