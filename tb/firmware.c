/* A CPU's software for the FPGA top, built against the mte_dma.h that `mte header`
 * writes. tb/test_fpga_top.py's c_firmware builds it as a shared library and carries each
 * of its register accesses over AXI4-Lite to the simulated top, through the two
 * callbacks fw_connect gives it. */
#include <stdint.h>

static uint32_t (*bus_read)(uint32_t offset);
static void (*bus_write)(uint32_t offset, uint32_t value);

#define MTE_DMA_READ(base, offset) bus_read((uint32_t)((base) + (offset)))
#define MTE_DMA_WRITE(base, offset, value) bus_write((uint32_t)((base) + (offset)), (value))
#include "mte_dma.h"

void fw_connect(uint32_t (*read)(uint32_t), void (*write)(uint32_t, uint32_t))
{
    bus_read = read;
    bus_write = write;
}

/* Runs a program's command words (what `mte asm` writes) on the engine at base and
 * returns IRQ_STATUS once it is done. */
uint32_t fw_run(uintptr_t base, const uint32_t *words, uint32_t n)
{
    mte_dma_push(base, words, n);
    return mte_dma_wait_done(base);
}
