"""Shared by the model zoo: the ``pretrained=True`` refusal."""


def no_pretrained(arch, pretrained):
    """headrace ships no weights and these machines have no network: say so instead of downloading."""
    if pretrained:
        raise NotImplementedError(
            f"{arch}(pretrained=True): pretrained weights are not available in headrace (nothing is "
            f"downloaded and no weights ship with it). Build {arch}(pretrained=False) and load weights you "
            f"have with model.set_state_dict(paddle.load(path)).")
