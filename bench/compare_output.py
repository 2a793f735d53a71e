#!/usr/bin/env python3
"""Compares co_up's output with a golden one, for bench/validate*.sh.

    compare_output.py OUT.npy GOLDEN.npy   ->   "max|diff| diff/range argmax ok"

ok is 1 when the maximum absolute difference is at most 1e-3 of the golden output's range and the
argmax is the same (the tolerance the validation scripts check), else 0.
"""
import sys

import numpy as np

a = np.load(sys.argv[1]).astype(np.float64)
b = np.load(sys.argv[2]).astype(np.float64).reshape(a.shape)
diff = float(np.abs(a - b).max())
rel = diff / float(b.max() - b.min())
same = int(a.argmax()) == int(b.argmax())
print(f"{diff:.3e} {rel:.2e} {'same' if same else 'DIFFERENT'} {int(rel <= 1e-3 and same)}")
