"""The engine in Amaranth HDL, by role, in data-flow order:

    intake/    command words -> whole commands, dispatched to the pipes; buffer-ID tokens
    pipe/      per pipe: registers, rule checker, address generator (the rows of a copy);
               the event flags between pipes
    datapath/  the copies themselves: AXI4 reader and writer with their burst legalizer,
               byte aligner, pad stage, UB reader, line writer; MTE2, MTE3 and UB->UB
    ub/        the Unified Buffer, which the datapaths read and write
    layouts.py the payloads and widths the stages share
    lib/       generic blocks with no engine knowledge: queues, stream stages, registers
               and LUTs that synthesis keeps, multiplier, block RAM, AXI4 signatures

    top.py     the simulation top: only wires the stages together
    soc/       the FPGA top behind an AXI4-Lite CSR front end, its register map and C header
    gen.py     `python -m hdl.gen`: the Verilog of either top
    fpga/      the ECP5 build flow: `python -m hdl.fpga.build`

Import rule: a module imports only from its own package or from a layer below it. The
layers, lowest first (`model` is below them all and imports nothing of hdl):

    model -> hdl.lib -> hdl.layouts -> hdl.ub -> hdl.datapath -> hdl.intake -> hdl.pipe
          -> hdl.top -> hdl.soc -> hdl.gen, hdl.fpga

The datapath is below intake and the pipe because the pipe's checker and address
generator work out the datapaths' row terms (`legalizer.row_terms`, `first_split`,
`ub_reader.ub_words_m1`) ahead of the row.
"""
