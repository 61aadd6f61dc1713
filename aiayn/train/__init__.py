"""Training with the paper's recipe.  Sections 5.1-5.4 and 6.1 (checkpoint averaging).

``schedule`` holds Eq. (3) and Adam, ``loop`` the training loop (the label-smoothed loss it
minimises is ``aiayn.loss``), ``configure`` what a run is merged from and checked against
before its first step (the settings, its config.json, the data's tokenizer), ``runtime`` how
the loop runs (``Runtime``: device, kernels, bf16, compile; DDP), ``batches`` what it reads
(``TrainData``, the batch stream), ``session`` the run it writes (the ``Session`` that writes
checkpoints and metrics and decides when to stop), ``signals`` Ctrl-C and SIGTERM,
``checkpoints`` writing and resuming checkpoints (their layout: ``aiayn.run_dir``),
``averaging`` checkpoint averaging (6.1), ``distributed`` the torchrun process group,
``metrics`` the JSON-lines log and its plots, ``bleu`` the validation BLEU.
"""

from aiayn.loss import label_smoothed_loss, smoothed_entropy, token_accuracy
from aiayn.run_dir import latest_checkpoint, list_checkpoints
from aiayn.train.averaging import average_checkpoints, average_to_file, resolve_model_files
from aiayn.train.batches import TrainData
from aiayn.train.checkpoints import Progress
from aiayn.train.configure import (
    RunConfig,
    Settings,
    check_run,
    load_train_data,
    read_run_config,
    resolve_configs,
)
from aiayn.train.loop import TrainResult, train, train_step, validate
from aiayn.train.metrics import plot_metrics, read_metrics
from aiayn.train.runtime import Runtime
from aiayn.train.schedule import (
    SCHEDULES,
    learning_rate,
    linear_lr,
    make_optimizer,
    noam_lr,
    schedule_preset,
)
from aiayn.train.session import TrainingDiverged

__all__ = [
    "SCHEDULES",
    "Progress",
    "RunConfig",
    "Runtime",
    "Settings",
    "TrainData",
    "TrainResult",
    "TrainingDiverged",
    "average_checkpoints",
    "average_to_file",
    "check_run",
    "label_smoothed_loss",
    "latest_checkpoint",
    "learning_rate",
    "linear_lr",
    "list_checkpoints",
    "load_train_data",
    "make_optimizer",
    "noam_lr",
    "plot_metrics",
    "read_metrics",
    "read_run_config",
    "resolve_configs",
    "resolve_model_files",
    "schedule_preset",
    "smoothed_entropy",
    "token_accuracy",
    "train",
    "train_step",
    "validate",
]
