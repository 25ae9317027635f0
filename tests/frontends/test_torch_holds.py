"""PyTorch holds live in the module (a parametrization), so they stay exact in the user's own training loop:
held entries are bit-exact (0.0, or their frozen values) through every torch.optim optimizer, gradient
clipping, autocast with a GradScaler, an EMA and state_dict save/load; selections index PyTorch's own layout;
fp.finalize gives a plain module with the zeros in `.weight`; the pruner removes whole kernels; a polynomial
schedule prunes gradually and a lottery ticket rewinds exactly, in the user's own loop."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch front end needs the torch extra (pip install -e '.[torch]')")
from torch import nn  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.pruning import Pruner  # noqa: E402

OPTIMIZERS = {
    "SGD+momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "SGD+Nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
    "Adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.5),
    "RMSprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, momentum=0.5),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}
# (model, its input shape, pruned selections, frozen selections), in PyTorch's layout
LAYERS = {
    "Linear": (
        lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)),
        (6,),
        ["0[2, :]", "2/bias[1]"],
        ["2[0, 4]"],
    ),
    "Conv1d": (
        lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6, 3)),
        (3, 8),
        ["0[1, 2, :]"],
        ["0[3, 0, 1]"],
    ),
    "Conv2d": (
        lambda: nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3)),
        (2, 6, 6),
        ["0[1, 0, :, :]", "0[3, 1]"],
        ["0[0, 1, 2, 2]"],
    ),
}


def _held(kind: str, seed: int):
    build, shape, pruned, frozen = LAYERS[kind]
    torch.manual_seed(seed)
    model = build()
    return fp.hold(model, prune=pruned, freeze=frozen), shape


def _targets(model) -> dict:
    """{(module, parameter): (mask, target)} of every hold, in PyTorch's layout."""
    found = {}
    for name, module in model.named_modules():
        for parameter, parametrizations in getattr(module, "parametrizations", {}).items():
            hold = parametrizations[0]
            found[(name, parameter)] = (hold.mask.numpy().copy(), hold.target.numpy().copy())
    return found


def _assert_held(model, targets: dict) -> None:
    for (name, parameter), (mask, target) in targets.items():
        value = getattr(model.get_submodule(name), parameter).detach().numpy()
        assert np.array_equal(value[mask].view(np.uint32), target[mask].view(np.uint32)), (name, parameter)


def _train(model, shape, optimizer, steps=6, clip=None, amp=False, ema=None, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x, y = torch.randn(32, *shape, generator=generator), torch.randint(0, 3, (32,), generator=generator)
    scaler = torch.amp.GradScaler("cpu") if amp else None
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
        if ema is not None:
            ema.update_parameters(model)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", list(LAYERS))
@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_held_entries_stay_bit_exact_through_every_optimizer(kind, optimizer, seed):
    held, shape = _held(kind, seed)
    targets = _targets(held)
    before = {n: p.detach().clone() for n, p in held.named_parameters()}
    _train(held, shape, OPTIMIZERS[optimizer](held.parameters()), seed=seed)
    _assert_held(held, targets)
    assert any(not torch.equal(before[n], p) for n, p in held.named_parameters())  # the free entries trained


@pytest.mark.parametrize("kind", list(LAYERS))
def test_clipping_autocast_with_a_grad_scaler_and_an_ema_keep_them(kind):
    held, shape = _held(kind, 2)
    targets = _targets(held)
    _train(held, shape, torch.optim.AdamW(held.parameters(), lr=1e-2, weight_decay=0.1), clip=0.1)
    _train(held, shape, torch.optim.SGD(held.parameters(), lr=0.05, momentum=0.9), amp=True)
    ema = torch.optim.swa_utils.AveragedModel(held)
    _train(held, shape, torch.optim.Adam(held.parameters(), lr=1e-2), ema=ema)
    _assert_held(held, targets)
    _assert_held(ema.module, targets)


def test_a_state_dict_saves_and_loads_with_its_holds(tmp_path):
    held, shape = _held("Conv2d", 3)
    _train(held, shape, torch.optim.Adam(held.parameters(), lr=1e-2))
    torch.save(held.state_dict(), tmp_path / "held.pt")
    again, _ = _held("Conv2d", 4)  # another start, held the same way
    again.load_state_dict(torch.load(tmp_path / "held.pt", weights_only=True))
    x = torch.randn(8, *shape)
    assert torch.equal(again(x), held(x))
    _assert_held(again, _targets(held))


def test_selections_index_pytorchs_layout_and_finalize_gives_a_plain_module():
    held, _ = _held("Conv2d", 5)
    weight = held[0].weight.detach().numpy()
    assert np.all(weight[1, 0] == 0) and np.all(weight[3, 1] == 0)  # kernels from input 0 and 1 to outputs 1, 3
    assert np.count_nonzero(weight == 0) == 2 * 9
    plain, manifest = fp.finalize(held)
    assert type(plain[0]) is nn.Conv2d and not hasattr(plain[0], "parametrizations")
    assert torch.equal(plain[0].weight, held[0].weight) and {e.layer for e in manifest} == {"0"}
    assert type(held[0]).__name__ == "ParametrizedConv2d"  # the held model is left as it was
    with pytest.raises(fp.SelectionError, match=r"0/kernel has shape \(4, 2, 3, 3\)"):
        fp.hold(plain, prune=["0[4, 0, :, :]"])  # out of range: the message names PyTorch's shape


def test_the_pruner_removes_whole_kernels_of_a_module():
    held, _ = _held("Conv2d", 6)
    pruned = Pruner(structure="kernel", layers=["0"]).prune(held, sparsity=0.5)
    kernels = np.abs(pruned[0].weight.detach().numpy()).sum(axis=(2, 3))
    assert int((kernels == 0).sum()) == 4 and kernels[1, 0] == 0 and kernels[3, 1] == 0  # the held ones among them


def _loop(model, steps: int, seed: int, before_step=None):
    """The user's own loop (Adam) on random data; `before_step(step)` runs before each optimizer step."""
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(32, 2, 6, 6), torch.randint(0, 3, (32,))
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("seed", [0, 1])
def test_a_polynomial_schedule_prunes_a_module_gradually_in_the_users_loop(seed):
    """`GradualPruning.prune_at(model, step)` before each optimizer step: the sparsity climbs on the schedule's
    steps to the target, and what was pruned stays exactly 0.0 through the later steps."""
    from fpgaprune.pruning import GradualPruning, PolynomialDecay

    held, _ = _held("Conv2d", seed)
    pruner = Pruner(structure="kernel", layers=["0"])
    model = pruner.attach(held)
    gradual = GradualPruning(pruner, PolynomialDecay(0.0, 0.75, begin_step=0, end_step=12, frequency=4))
    _loop(model, 16, seed, lambda step: gradual.prune_at(model, step))
    steps, achieved = [step for step, _, _ in gradual.history], [a for _, _, a in gradual.history]
    assert steps == [0, 4, 8, 12] and achieved == sorted(achieved) and achieved[-1] == pytest.approx(0.75)
    kernels = np.abs(model[0].weight.detach().numpy()).sum(axis=(2, 3))
    assert int((kernels == 0).sum()) == 6 and kernels[1, 0] == 0  # 6 of 8 kernels, the held one among them


@pytest.mark.parametrize("seed", [0, 1])
def test_a_lottery_ticket_rewinds_a_modules_survivors_bit_exactly(seed):
    """Each round trains in the user's loop, prunes, and rewinds the survivors to their first values exactly."""
    from fpgaprune.pruning import LotteryTicket
    from fpgaprune.pruning.lottery import survivors_match

    held, _ = _held("Conv2d", seed)
    ticket = LotteryTicket.reaching(Pruner(structure="kernel", layers=["0"]), rounds=2, sparsity=0.5)
    model = ticket.start(held)
    for round_index in range(2):
        ticket.train_round(model, lambda m, hooks: _loop(m, 5, seed + round_index), round_index)
        assert not survivors_match(model, ticket.rewind_weights)  # training moved them
        ticket.prune_and_rewind(model, round_index)
        assert survivors_match(model, ticket.rewind_weights)
    kernels = np.abs(model[0].weight.detach().numpy()).sum(axis=(2, 3))
    assert int((kernels == 0).sum()) == 4 and kernels[1, 0] == 0 and kernels[3, 1] == 0
