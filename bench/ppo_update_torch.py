"""The CNN update of fastbatch's BatchPPO, written again in PyTorch, to time it on a GPU.

    python bench/ppo_update_torch.py [--preset atari_native] [--device cpu|cuda] [--rounds 15]
                                     [--envs N] [--threads N] [--compile]

fastbatch's trainer is TensorFlow, and the GPU machine lent to some sessions here has no
TensorFlow and no network (TensorFlow with its CUDA libraries is about 2 GB; 64 MiB travels to
it a call), but it has PyTorch. So this script does the same arithmetic as one update of
`bench/ppo_update.py` on random data of the preset's shapes: the behaviour pass over the whole
rollout (and the bootstrap observations), GAE, then epochs x minibatches of clipped-PPO
gradient steps (the preset's torso and linear heads, clipped values, entropy bonus, advantage
normalisation per minibatch, global-norm clipping, Adam with eps 1e-5; the reward scaling of
the Atari preset, a few elementwise ops, is left out), and prints milliseconds
per update: median, min and max over the rounds, after untimed warm-up calls. Run it on the CPU
beside `bench/ppo_update.py` to see that both frameworks do comparable work; on a GPU it says
what a device would give the update. It times PyTorch's kernels, not fastbatch's code.

`--compile` also times the update's minibatch step through `torch.compile` (a variant beside
eager, alternated round by round). The shapes table below mirrors fastbatch's presets
(tests/test_bench_harness.py checks that it does).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import _harness as harness

_GAIN = math.sqrt(2.0)  # the hidden layers' orthogonal gain, as torsos.py


@dataclasses.dataclass(frozen=True)
class Shapes:
    """What one update of a preset computes on: the observation, the torso and the schedule."""

    obs_shape: tuple[int, ...]  # as the env gives it (channel-first for the Atari stack)
    obs_dtype: str  # "uint8" (scaled by 1/255 in the network) or "bool"
    actions: int
    cnn: str  # "nature" or "small"
    num_envs: int
    rollout_steps: int
    epochs: int
    minibatches: int
    learning_rate: float
    clip_ratio: float
    value_clip: float
    entropy_coef: float
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    gamma: float = 0.99
    gae_lambda: float = 0.95


PRESETS = {
    "atari_native": Shapes((4, 84, 84), "uint8", 4, "nature", 8, 128, 4, 4, 2.5e-4, 0.1, 0.1, 0.01),
    "minatar_freeway": Shapes((10, 10, 7), "bool", 3, "small", 32, 128, 4, 8, 1e-3, 0.2, 0.0, 0.01),
    "minatar_asterix": Shapes(
        (10, 10, 4), "bool", 5, "small", 16, 128, 4, 8, 2e-3, 0.2, 0.0, 0.01, gae_lambda=0.9
    ),
}


def build(shapes: Shapes, torch, nn):
    """The torso and both heads (orthogonal weights, gain sqrt(2); heads 0.01 and 1.0, as
    fastbatch's torsos.py and networks.py)."""

    def init(layer, gain=_GAIN):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
        return layer

    if shapes.cnn == "nature":
        channels, height, width = shapes.obs_shape
        torso = nn.Sequential(
            init(nn.Conv2d(channels, 32, 8, 4)),
            nn.ReLU(),
            init(nn.Conv2d(32, 64, 4, 2)),
            nn.ReLU(),
            init(nn.Conv2d(64, 64, 3, 1)),
            nn.ReLU(),
            nn.Flatten(),
        )
        size = 512
    else:
        height, width, channels = shapes.obs_shape
        torso = nn.Sequential(init(nn.Conv2d(channels, 16, 3, 1)), nn.ReLU(), nn.Flatten())
        size = 128
    with torch.no_grad():
        flat = torso(torch.zeros(1, channels, height, width)).shape[1]
    torso.append(init(nn.Linear(flat, size)))
    torso.append(nn.ReLU())
    return torso, init(nn.Linear(size, shapes.actions), 0.01), init(nn.Linear(size, 1), 1.0)


class Update:
    """One update of `shapes` on `device` (the modules live there; `data` is a rollout there)."""

    def __init__(self, shapes: Shapes, device: str, compiled: bool, seed: int):
        import torch
        from torch import nn

        self.torch, self.shapes, self.device = torch, shapes, device
        torch.manual_seed(seed)
        self.torso, self.policy, self.value = (m.to(device) for m in build(shapes, torch, nn))
        self.params = [p for m in (self.torso, self.policy, self.value) for p in m.parameters()]
        self.optimizer = torch.optim.Adam(self.params, lr=shapes.learning_rate, eps=1e-5)
        self.step = torch.compile(self._minibatch) if compiled else self._minibatch

    def features(self, obs):
        x = obs.float()
        if self.shapes.obs_dtype == "uint8":
            x = x / 255.0
        if self.shapes.cnn == "small":  # the env's channel-last frames, as NCHW
            x = x.permute(0, 3, 1, 2)
        return self.torso(x)

    def rollout(self, seed: int):
        """Random observations, actions, rewards and ends of the preset's rollout."""
        torch, s = self.torch, self.shapes
        g = torch.Generator().manual_seed(seed)
        T, N = s.rollout_steps, s.num_envs
        if s.obs_dtype == "uint8":
            obs = torch.randint(0, 256, (T + 1, N, *s.obs_shape), generator=g, dtype=torch.uint8)
        else:
            obs = torch.rand((T + 1, N, *s.obs_shape), generator=g) < 0.1
        return {
            "obs": obs.to(self.device),
            "actions": torch.randint(0, s.actions, (T, N), generator=g).to(self.device),
            "rewards": torch.randn((T, N), generator=g).to(self.device),
            "dones": (torch.rand((T, N), generator=g) < 0.01).to(self.device),
        }

    def __call__(self, data):
        torch, s = self.torch, self.shapes
        T, N = s.rollout_steps, s.num_envs
        with torch.no_grad():  # the behaviour policy's view, as fastbatch recomputes it
            features = self.features(data["obs"].reshape(-1, *s.obs_shape))
            values = self.value(features).reshape(T + 1, N)
            logits = self.policy(features[: T * N])
            old_logp = torch.distributions.Categorical(logits=logits).log_prob(
                data["actions"].reshape(-1)
            )
            adv = torch.zeros((T, N), device=self.device)
            last = torch.zeros(N, device=self.device)
            alive = 1.0 - data["dones"].float()
            for t in reversed(range(T)):  # GAE
                delta = data["rewards"][t] + s.gamma * values[t + 1] * alive[t] - values[t]
                last = delta + s.gamma * s.gae_lambda * alive[t] * last
                adv[t] = last
            returns = (adv + values[:T]).reshape(-1)
            batch = {
                "obs": data["obs"][:T].reshape(-1, *s.obs_shape),
                "actions": data["actions"].reshape(-1),
                "old_logp": old_logp,
                "old_values": values[:T].reshape(-1),
                "adv": adv.reshape(-1),
                "returns": returns,
            }
        size = T * N // s.minibatches
        for _ in range(s.epochs):
            order = torch.randperm(T * N, device=self.device)
            for k in range(s.minibatches):
                take = order[k * size : (k + 1) * size]
                kl = self.step({name: x[take] for name, x in batch.items()})
        return float(kl)

    def _minibatch(self, mb):
        torch, s = self.torch, self.shapes
        features = self.features(mb["obs"])
        dist = torch.distributions.Categorical(logits=self.policy(features))
        logp = dist.log_prob(mb["actions"])
        ratio = torch.exp(logp - mb["old_logp"])
        adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
        clipped = torch.clamp(ratio, 1 - s.clip_ratio, 1 + s.clip_ratio)
        policy_loss = -torch.minimum(ratio * adv, clipped * adv).mean()
        value = self.value(features).squeeze(-1)
        value_error = (value - mb["returns"]) ** 2
        if s.value_clip > 0:
            moved = mb["old_values"] + torch.clamp(
                value - mb["old_values"], -s.value_clip, s.value_clip
            )
            value_error = torch.maximum(value_error, (moved - mb["returns"]) ** 2)
        loss = policy_loss + s.value_coef * 0.5 * value_error.mean()
        loss = loss - s.entropy_coef * dist.entropy().mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, s.max_grad_norm)
        self.optimizer.step()
        return (mb["old_logp"] - logp).mean().detach()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="atari_native", choices=sorted(PRESETS))
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:K")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per variant")
    parser.add_argument("--envs", type=int, help="num_envs instead of the preset's")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: cores)")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile")
    args = parser.parse_args(argv)
    import torch

    shapes = PRESETS[args.preset]
    if args.envs:
        shapes = dataclasses.replace(shapes, num_envs=args.envs)
    torch.set_num_threads(args.threads or harness.cores())
    run = harness.RunInfo(
        packages=("torch",),
        preset=args.preset,
        device=args.device,
        num_envs=shapes.num_envs,
        rounds=args.rounds,
    )
    print(run.header())
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"device {args.device} ({where}); torch threads {torch.get_num_threads()}")

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize(args.device)

    updates = {"eager": Update(shapes, args.device, False, 0)}
    if args.compile:
        updates["compiled"] = Update(shapes, args.device, True, 0)
    data = updates["eager"].rollout(1)
    for name, update in updates.items():
        start = time.perf_counter()
        for _ in range(max(1, args.warmup)):
            update(data)
        sync()
        print(f"{name}: {args.warmup} warm-up calls {time.perf_counter() - start:.2f} s")
    times: dict[str, list[float]] = {name: [] for name in updates}
    for _ in range(args.rounds):
        for name, update in updates.items():
            sync()
            start = time.perf_counter()
            update(data)  # ends in float(kl): the device has finished the update
            times[name].append(1000 * (time.perf_counter() - start))
    steps = shapes.epochs * shapes.minibatches
    print(
        f"{args.preset}: {shapes.num_envs} envs x {shapes.rollout_steps} steps, "
        f"{shapes.epochs} epochs x {shapes.minibatches} minibatches, cnn {shapes.cnn}, obs "
        f"{shapes.obs_shape} {shapes.obs_dtype}; {args.rounds} rounds"
    )
    for name, values in times.items():
        median = harness.median(values)
        print(
            f"{name:>8}: median {median:8.1f} ms/update ({median / steps:.3f} ms/minibatch), "
            f"min {min(values):.1f}, max {max(values):.1f}"
        )
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
