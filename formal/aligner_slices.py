"""The aligner is bit-sliced: at 8 bits a lane it is eight copies of itself at 1 bit a
lane, sharing one control. Both are given the same rows and handshakes, and the one at
1 bit each lane's bit b of the other's source words (b free but fixed): every register
and queue row of the two agrees (the one's words each lane's bit b of the other's, all
else equal), and so do their outputs.

So the byte contract at 1 bit a lane (aligner_any_bit_w*) is the byte contract at 8: a
destination byte's bit b is the bit-b block's lane, which holds bit b of v wherever its
sources hold it. At W = 64 and 128 the contract at 8 bits a lane is beyond the solver."""

from amaranth.asserts import AnyConst
from amaranth.hdl import C, Cat, MemoryInstance, Module, Signal, Value

from hdl.datapath.aligner import Aligner

from .inputs import free
from .props import add_block, memory_rows, prop, registers_in_order
from .runner import Mutation

LANE_BITS = 8


def bit_slices_harness(width_bytes):
    def build(mutation):
        m = Module()
        wide = add_block(m, "bytes", Aligner(width_bytes, LANE_BITS), mutation)
        narrow = add_block(m, "bits", Aligner(width_bytes, 1), mutation)
        bit = Signal(range(LANE_BITS), name="sliced_bit")
        m.d.comb += bit.eq(AnyConst(len(bit)))

        def sliced(word):
            return _bit_of_each_lane(word, bit, width_bytes)

        free(m, wide.rows.valid, Value.cast(wide.rows.payload), wide.src.valid,
             Value.cast(wide.src.payload), wide.dst.ready)
        m.d.comb += [
            narrow.rows.valid.eq(wide.rows.valid),
            narrow.rows.payload.eq(wide.rows.payload),
            narrow.src.valid.eq(wide.src.valid),
            narrow.src.payload.data.eq(sliced(wide.src.payload.data)),
            narrow.dst.ready.eq(wide.dst.ready),
        ]
        prop(m, "ready_agrees", (narrow.rows.ready == wide.rows.ready)
             & (narrow.src.ready == wide.src.ready))
        out, out_bits = wide.dst.payload, narrow.dst.payload
        prop(m, "dst_agrees", (narrow.dst.valid == wide.dst.valid)
             & (out_bits.strb == out.strb) & (out_bits.last == out.last)
             & (out_bits.data == sliced(out.data)))
        _state_agrees(m, m.submodules["bytes"], m.submodules["bits"], sliced,
                      LANE_BITS * width_bytes, "aligner")
        return m
    return build


def _bit_of_each_lane(word, bit, width_bytes):
    return Cat(word.word_select(lane, LANE_BITS).bit_select(bit, 1)
               for lane in range(width_bytes))


def _state_agrees(m, wide, narrow, sliced, word_bits, path):
    """Each register of fragment `wide` agrees with its namesake in `narrow`: equal where
    their widths are; else the wide one starts with a data word (its layouts put `data`
    first), whose sliced bits are the narrow one's, and the rest is equal. Each queue
    row is equal (the queues hold rows' tags, not data). The same for every subfragment,
    which both blocks elaborate alike."""
    wide_registers = registers_in_order(wide)
    for register, other in zip(wide_registers, registers_in_order(narrow), strict=True):
        name = register.name
        assert other.name == name, (name, other.name)
        if len(register) == len(other):
            test = register == other
        else:
            assert len(register) - len(other) == word_bits - word_bits // LANE_BITS, name
            test = ((other[:word_bits // LANE_BITS] == sliced(register[:word_bits]))
                    & (other[word_bits // LANE_BITS:] == register[word_bits:]))
        prop(m, f"{path}_{name}_agrees", test)
    narrow_subs = {name: sub for sub, name, _ in narrow.subfragments}
    for sub, name, _ in wide.subfragments:
        other = narrow_subs.get(name)
        if other is None:
            # A wide register loads in more groups of bits, each from a cell of its own
            # (kept_lut.load_in_groups), which holds no state.
            assert not registers_in_order(sub) and not sub.subfragments, name
        elif isinstance(sub, MemoryInstance):
            rows = memory_rows(sub)
            test = C(1, 1)
            for row, other_row in zip(rows, memory_rows(other), strict=True):
                test &= row == other_row
            prop(m, f"{path}_{name}_rows_agree", test)
            # A read past the rows is free in each block: the queue's pointers stay in.
            depth = len(rows)
            for register in wide_registers:
                if register.name in ("r_ptr", "w_ptr"):
                    prop(m, f"{path}_{register.name}_within_{name}", register < depth)
        else:
            _state_agrees(m, sub, other, sliced, word_bits, f"{path}_{name}")


def _bits_swapped_in_each_lane(rotator):
    """Each source word's lanes with their bits 0 and 1 swapped as they enter the
    rotator: at 1 bit a lane the block is as it was, so only the slices' agreement sees
    it."""
    def patched(self, m, source, *args):
        valid, word, amount = source
        lanes = (word.word_select(lane, self._lane_bits) for lane in range(self._width))
        swapped = Cat((Cat(lane[1], lane[0], lane[2:]) if len(lane) > 1 else lane)
                      for lane in lanes)
        return rotator(self, m, (valid, swapped, amount), *args)
    return patched


BITS_SWAPPED = Mutation("bits_swapped_in_each_lane", "each source lane's bits 0 and 1 "
                        "swapped as they enter the rotator",
                        ((Aligner, "_rotator", _bits_swapped_in_each_lane(Aligner._rotator)),))
