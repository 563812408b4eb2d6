"""PyTorch peer of bench/cpu_train_step.sh: the MLP of examples/mlp.tg
(784 -> 256 -> 10, ReLU, cross-entropy, AdamW, clip_grad_norm 1.0) trained
for a fixed number of steps at batch 128 on random data; prints samples/s.
Run with Debian's python3-torch (OpenBLAS) and 2 threads."""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 128
torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 2)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
x = torch.rand(batch, 784)
y = torch.randint(0, 10, (batch,))
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


for _ in range(20):  # warm-up
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
elapsed = time.perf_counter() - start
print(f"pytorch {torch.__version__} threads {torch.get_num_threads()} "
      f"samples/s {steps * batch / elapsed:.1f}")
