"""What every example here needs: torch, kplay (with kplay.torch) and a CUDA GPU. An example calls
cuda_or_exit() before importing them, so that where one is missing it ends with one line saying
which, and exit status 3 (the status `kplay` gives where the chosen backend has no device),
instead of a traceback from inside torch. Status 3, not 0: the example measured nothing, and a
script running the examples should see that."""
import importlib.util
import os
import sys

EXIT_MISSING = 3


def _stop(what):
    print(f"{os.path.basename(sys.argv[0])}: nothing run: {what}", file=sys.stderr)
    sys.exit(EXIT_MISSING)


def cuda_or_exit():
    for module, how in (("torch", "pip install torch"), ("kplay", "pip install . in kplay's checkout")):
        if importlib.util.find_spec(module) is None:
            _stop(f"needs the Python package {module} ({how})")
    import torch

    if not torch.cuda.is_available():
        _stop(f"needs a CUDA GPU, and torch {torch.__version__} sees none (torch.cuda.is_available() is False)")
