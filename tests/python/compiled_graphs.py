"""torch.compile helpers for the kplay.torch tests, imported by test_torch_ops.py and
test_gated_torch.py (needs torch): the forward and backward graphs AOTAutograd makes (with
Inductor's decompositions, so a decomposed kplay op is gone from them), traced on meta tensors;
and a compiled function's values and gradients against its eager run."""
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


def assert_compiled_matches_eager(f, x, g, exact, tol, msg):
    """f compiled (fullgraph) against f eager: f(x) and its gradient for g, bit for bit where
    exact (the kernel kept), else within tol (a decomposition that Inductor evaluates)."""
    want = f(x)
    (want_grad,) = torch.autograd.grad(want, x, g)
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(x)
    (got_grad,) = torch.autograd.grad(got, x, g)
    if exact:
        assert torch.equal(got, want) and torch.equal(got_grad, want_grad), msg
    else:
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=msg)
        torch.testing.assert_close(got_grad, want_grad, rtol=tol, atol=tol, msg=msg)
