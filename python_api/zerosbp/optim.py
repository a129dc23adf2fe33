"""Optimizers (torch.optim's definitions): they only configure the graph's
update; the update itself is compiled into the graph."""


class Optimizer:
    kind = None

    def __init__(self, params, lr):
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{type(self).__name__} got an empty parameter "
                             "list")
        if isinstance(self.params[0], dict):
            raise NotImplementedError(
                f"{type(self).__name__}: parameter groups are not supported; "
                "pass one list of parameters")
        if lr <= 0:
            raise ValueError(f"{type(self).__name__}: lr must be positive, "
                             f"got {lr}")
        self.lr = float(lr)

    def _spec(self):
        return {"optimizer": self.kind, "lr": self.lr}


class SGD(Optimizer):
    """``p -= lr * g``."""
    kind = "sgd"

    def __init__(self, params, lr=1e-3, momentum=0, weight_decay=0):
        super().__init__(params, lr)
        if momentum or weight_decay:
            raise NotImplementedError(
                "SGD: momentum and weight_decay are not supported (nn.sgd is "
                "p - lr * g); use Adam or AdamW")


class Adam(Optimizer):
    """torch.optim.Adam (weight decay added to the gradient)."""
    kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0):
        super().__init__(params, lr)
        self.betas, self.eps = tuple(float(b) for b in betas), float(eps)
        self.weight_decay = float(weight_decay)

    def _spec(self):
        return dict(super()._spec(), beta1=self.betas[0], beta2=self.betas[1],
                    eps=self.eps, weight_decay=self.weight_decay)


class AdamW(Adam):
    """torch.optim.AdamW (decoupled weight decay, default 0.01)."""
    kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
