"""The elaboration target of the ECP5 builds (`make fpga`)."""


class Ecp5Target:
    """Passed as the platform when the ECP5 builds convert the design: blocks that have an
    ECP5 primitive form (RegisteredMultiplier, BlockRam, RegisterCopy, KeptLut) use it."""
