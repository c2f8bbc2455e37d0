// Compiled into the Verilator model (tb/run.py): lets the cocotb harness find the UB's
// memories by name and read and write them in place (tb/backdoor.py), where a word at a
// time through VPI would cost more than the test port it replaces.
#include <cstring>

#include "verilated.h"
#include "verilated_syms.h"

// The n-th public variable named `var`, in the order of its scopes' names: its data's
// address (nullptr past the last), its size in bytes, and its scope's name.
extern "C" void* mte_public_variable(const char* var, int n, size_t* bytes, char* scope,
                                     size_t scope_size) {
    const VerilatedScopeNameMap* scopes = Verilated::threadContextp()->scopeNameMap();
    for (const auto& entry : *scopes) {
        const VerilatedVar* found = entry.second->varFind(var);
        if (!found || n--) continue;
        *bytes = found->totalSize();
        std::strncpy(scope, entry.first, scope_size - 1);
        scope[scope_size - 1] = '\0';
        return found->datap();
    }
    return nullptr;
}
