"""tools/torch_sass_count.py: its reading of nvdisasm output (a kernel's fast path is its opcodes
from its label to the first EXIT, predicates dropped, NOPs left out, another kernel's code never
taken) and its refusals of bad arguments; no GPU, torch or CUDA tools needed."""
import pathlib
import subprocess
import sys

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
import torch_sass_count as tsc  # noqa: E402

SASS = """\
.text._Z1av:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 BRA `(.L_x_1) ;
        /*0020*/                   NOP ;
        /*0030*/               @P1 MUFU.EX2 R2, R3 ;
        /*0040*/                   FFMA R4, R2, R3, R4 ;
        /*0050*/                   EXIT ;
.L_x_1:
        /*0060*/                   DFMA R6, R6, R8, R10 ;
        /*0070*/                   EXIT ;
//--------------------- .text._Z1bv --------------------------
.text._Z1bv:
        /*0000*/                   DADD R2, R2, R4 ;
        /*0010*/                   EXIT ;
"""


def test_fast_path_stops_at_the_first_exit_and_keeps_opcodes_alone():
    assert tsc.fast_path(SASS, "_Z1av") == ["LDC", "BRA", "MUFU.EX2", "FFMA", "EXIT"]


def test_a_kernel_is_read_from_its_own_label():
    assert tsc.fast_path(SASS, "_Z1bv") == ["DADD", "EXIT"]


def test_a_kernel_not_in_the_text_has_no_path():
    assert tsc.fast_path(SASS, "_Z1cv") == []


def test_fp64_pattern_counts_the_fp64_pipe_alone():
    ops = ["DFMA", "DADD", "DMUL", "DSETP.GT.AND", "FFMA", "F2F.F64.F32", "MUFU.RCP64H"]
    assert [o for o in ops if tsc.FP64.match(o)] == ["DFMA", "DADD", "DMUL", "DSETP.GT.AND"]


def test_an_unknown_row_is_refused_with_the_rows_it_has():
    run = subprocess.run([sys.executable, str(TOOLS / "torch_sass_count.py"), "gelu(tanh)"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "no row gelu(tanh)" in run.stderr and "gelu(approximate=tanh)" in run.stderr


def test_a_missing_library_is_refused_before_any_tool_runs(tmp_path):
    run = subprocess.run([sys.executable, str(TOOLS / "torch_sass_count.py"), "--lib",
                          str(tmp_path / "libtorch_cuda.so"), "silu"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "libtorch_cuda.so" in run.stderr
