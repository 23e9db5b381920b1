"""DeepFilterNet3's configuration for the dfn3 case, and its seeded weights.

``full`` is the published DeepFilterNet3 config.ini (models/DeepFilterNet3.zip and DeepFilterNet3_onnx.tar.gz of
Rikorose/DeepFilterNet; its [df] and [deepfilternet] values as quoted by two independent copies: taproot's
DeepFilterNet3Model.CONFIG_INI and a port's ModelConfig that cites each value "from config"). ``small`` keeps every
[df] value (so the analysis, ERB bands, normalisation, deep filter and look-ahead are the real ones) and shrinks only
the network's widths, so the committed golden and its ONNX files stay small.
"""
from __future__ import annotations

import torch

SAMPLE_RATE = 48000

_DF = dict(sr=48000, fft_size=960, hop_size=480, nb_erb=32, nb_df=96, norm_tau=1, lsnr_max=35, lsnr_min=-15,
           min_nb_erb_freqs=2, pad_mode='output', df_order=5, df_lookahead=2)

_NET = dict(conv_lookahead=2, conv_ch=64, conv_depthwise='True', emb_hidden_dim=256, emb_num_layers=3,
            enc_linear_groups=32, linear_groups=16, conv_dec_mode='transposed', convt_depthwise='False',
            mask_pf='False', pf_beta=0.02, df_hidden_dim=256, df_num_layers=2, dfop_method='df',
            group_shuffle='False', conv_kernel='1,3', df_gru_skip='groupedlinear', df_pathway_kernel_size_t=5,
            enc_concat='False', conv_kernel_inp='3,3', emb_gru_skip='none', df_n_iter=1, convt_kernel='1,3',
            lsnr_dropout='False')

CONFIGS = {
    'full': {**_DF, **_NET},
    'small': {**_DF, **_NET, 'conv_ch': 16, 'emb_hidden_dim': 32, 'df_hidden_dim': 32},
}

_DF_KEYS = tuple(_DF)


def config_ini(cfg: dict) -> str:
    """The config.ini text init_df reads: [train] model, [df], [deepfilternet]."""
    lines = ['[train]', 'model = deepfilternet3', 'mask_only = false', 'df_only = false', '', '[df]']
    lines += [f'{k} = {cfg[k]}' for k in _DF_KEYS]
    lines += ['', '[deepfilternet]']
    lines += [f'{k} = {cfg[k]}' for k in cfg if k not in _DF_KEYS]
    return '\n'.join(lines) + '\n'


@torch.no_grad()
def seed_weights(model: torch.nn.Module, seed_value: int) -> None:
    """Seeded weights that keep DFN3's activations in range through its depth.

    Convolutions, grouped linears and GRUs keep the initialisation the authors' modules draw (the caller seeds torch
    before building, so it is reproducible; their kaiming/uniform scales keep every layer's output neither saturated
    nor vanishing). BatchNorm layers, which start as the identity (weight 1, bias 0, mean 0, var 1) and would hide a
    wrong folding or channel order, get seeded scales, shifts and running statistics. The ERB filterbank buffers
    (erb_fb, erb_inv_fb) are fixed tables and stay as built."""
    gen = torch.Generator().manual_seed(seed_value)

    def noise(t: torch.Tensor, std: float) -> torch.Tensor:
        return torch.randn(t.shape, generator=gen, dtype=torch.float32) * std

    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.weight.copy_(1.0 + noise(module.weight, 0.2))
            module.bias.copy_(noise(module.bias, 0.2))
            module.running_mean.copy_(noise(module.running_mean, 0.2))
            module.running_var.copy_(torch.exp(noise(module.running_var, 0.3)))
