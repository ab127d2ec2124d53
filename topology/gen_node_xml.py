#!/usr/bin/env python3
"""Generate the constructed node XMLs in topology/systems (hwloc 2.x format).

Usage: python3 topology/gen_node_xml.py topology/systems
The output is committed; this script only records how it was made (see docs/topology.md).
"""
import sys, os

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help") or not os.path.isdir(sys.argv[1]):
    sys.stderr.write(__doc__.split("\n\n", 1)[1] if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")
                     else "usage: python3 topology/gen_node_xml.py OUT_DIR (an existing folder, e.g. topology/systems)\n")
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
OUT = sys.argv[1]

def chunks(vals, n=10):
    return [vals[i:i+n] for i in range(0, len(vals), n)]

class G:
    def __init__(self):
        self.gp = 0
    def next(self):
        self.gp += 1
        return self.gp

def node(p):
    g = G()
    L = []
    w = L.append
    ns = p['sockets']
    full = (1 << ns) - 1
    w('<?xml version="1.0" encoding="UTF-8"?>')
    w('<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    w('<topology version="2.0">')
    m = g.next()
    w(f'  <object type="Machine" os_index="0" cpuset="0x{full:08x}" complete_cpuset="0x{full:08x}" allowed_cpuset="0x{full:08x}" nodeset="0x{full:08x}" complete_nodeset="0x{full:08x}" allowed_nodeset="0x{full:08x}" gp_index="{m}">')
    w(f'    <info name="DMIProductName" value="{p["product"]} (constructed by mbsim)"/>')
    w(f'    <info name="Architecture" value="{p["arch"]}"/>')
    w('    <info name="mbsimProvenance" value="constructed description, not an lstopo capture; see the comment at the end of this file and docs/topology.md"/>')
    gpu_os = []   # gp of the nvml OS device of each GPU
    sw_pci = []   # gp of NVSwitch PCI devices
    gpus_per_sock = p['gpus'] // ns
    bus = 0x10
    gi = 0
    ni = 0
    for s in range(ns):
        bit = 1 << s
        pk = g.next()
        w(f'    <object type="Package" os_index="{s}" cpuset="0x{bit:08x}" complete_cpuset="0x{bit:08x}" nodeset="0x{bit:08x}" complete_nodeset="0x{bit:08x}" gp_index="{pk}">')
        w(f'      <info name="CPUModel" value="{p["cpu"]}"/>')
        nu = g.next()
        w(f'      <object type="NUMANode" os_index="{s}" cpuset="0x{bit:08x}" complete_cpuset="0x{bit:08x}" nodeset="0x{bit:08x}" complete_nodeset="0x{bit:08x}" gp_index="{nu}" local_memory="{p["numa_mem"]}"/>')
        co = g.next(); pu = g.next()
        w(f'      <object type="Core" os_index="{s}" cpuset="0x{bit:08x}" complete_cpuset="0x{bit:08x}" nodeset="0x{bit:08x}" complete_nodeset="0x{bit:08x}" gp_index="{co}">')
        w(f'        <object type="PU" os_index="{s}" cpuset="0x{bit:08x}" complete_cpuset="0x{bit:08x}" nodeset="0x{bit:08x}" complete_nodeset="0x{bit:08x}" gp_index="{pu}"/>')
        w('      </object>')
        gpn = p.get('gpus_per_nic', 1)
        for k in range(gpus_per_sock // gpn):
            # one host bridge (root complex) per group of gpn GPUs + 1 NIC, a PCIe switch below it
            b0 = bus; bus += 0x10
            last = b0 + 3 + gpn
            hb = g.next()
            w(f'      <object type="Bridge" gp_index="{hb}" bridge_type="0-1" depth="0" bridge_pci="0000:[{b0+1:02x}-{last:02x}]">')
            if p['pcie_switch']:
                up = g.next()
                w(f'        <object type="Bridge" gp_index="{up}" bridge_type="1-1" depth="1" bridge_pci="0000:[{b0+2:02x}-{last:02x}]" pci_busid="0000:{b0+1:02x}:00.0" pci_type="0604 [1000:c030] [1000:100b] 00" pci_link_speed="{p["link"]}">')
                ind = '          '
                dep = 2
            else:
                ind = '        '
                dep = 1
            for j in range(gpn):
                # GPU port
                dp = g.next()
                w(f'{ind}<object type="Bridge" gp_index="{dp}" bridge_type="1-1" depth="{dep}" bridge_pci="0000:[{b0+3+j:02x}-{b0+3+j:02x}]" pci_busid="0000:{b0+2:02x}:{j:02x}.0" pci_type="0604 [1000:c030] [1000:100b] 00" pci_link_speed="{p["link"]}">')
                gp = g.next()
                w(f'{ind}  <object type="PCIDev" gp_index="{gp}" pci_busid="0000:{b0+3+j:02x}:00.0" pci_type="0302 [10de:{p["gpu_dev"]}] [10de:0000] a1" pci_link_speed="{p["link"]}">')
                nv = g.next()
                w(f'{ind}    <object type="OSDev" gp_index="{nv}" name="nvml{gi}" osdev_type="5">')
                w(f'{ind}      <info name="Backend" value="NVML"/>')
                w(f'{ind}      <info name="GPUModel" value="{p["model"]}"/>')
                w(f'{ind}    </object>')
                cu = g.next()
                w(f'{ind}    <object type="OSDev" gp_index="{cu}" name="cuda{gi}" subtype="CUDA" osdev_type="5">')
                w(f'{ind}      <info name="Backend" value="CUDA"/>')
                w(f'{ind}      <info name="GPUModel" value="{p["model"]}"/>')
                w(f'{ind}      <info name="CUDAGlobalMemorySize" value="{p["mem_kib"]}"/>')
                w(f'{ind}    </object>')
                w(f'{ind}  </object>')
                w(f'{ind}</object>')
                gpu_os.append(nv)
                gi += 1
            # NIC port
            dp2 = g.next()
            w(f'{ind}<object type="Bridge" gp_index="{dp2}" bridge_type="1-1" depth="{dep}" bridge_pci="0000:[{last:02x}-{last:02x}]" pci_busid="0000:{b0+2:02x}:{gpn:02x}.0" pci_type="0604 [1000:c030] [1000:100b] 00" pci_link_speed="{p["link"]}">')
            nic = g.next()
            w(f'{ind}  <object type="PCIDev" gp_index="{nic}" pci_busid="0000:{last:02x}:00.0" pci_type="0207 [15b3:{p["nic_dev"]}] [15b3:0000] 00" pci_link_speed="{p["nic_link"]}">')
            ib = g.next()
            w(f'{ind}    <object type="OSDev" gp_index="{ib}" name="ibp{last}s0" osdev_type="2"/>')
            mx = g.next()
            w(f'{ind}    <object type="OSDev" gp_index="{mx}" name="mlx5_{ni}" osdev_type="3">')
            w(f'{ind}      <info name="Port1State" value="4"/>')
            w(f'{ind}    </object>')
            w(f'{ind}  </object>')
            w(f'{ind}</object>')
            if p['pcie_switch']:
                w('        </object>')
            w('      </object>')
            ni += 1
        if s == 0 and p['nvswitch'] > 0:
            b0 = bus; bus += 0x10
            hb = g.next()
            w(f'      <object type="Bridge" gp_index="{hb}" bridge_type="0-1" depth="0" bridge_pci="0000:[{b0:02x}-{b0+p["nvswitch"]:02x}]">')
            for k in range(p['nvswitch']):
                sp = g.next()
                w(f'        <object type="PCIDev" gp_index="{sp}" subtype="NVSwitch" pci_busid="0000:{b0+1+k:02x}:00.0" pci_type="0680 [10de:{p["sw_dev"]}] [10de:0000] a1" pci_link_speed="1.000000"/>')
                sw_pci.append(sp)
            w('      </object>')
        w('    </object>')
    w('  </object>')
    # NUMA latency (SLIT-style 10/21, as in the real samples)
    if ns == 2:
        w('  <distances2 type="NUMANode" nbobjs="2" kind="5" name="NUMALatency" indexing="os">')
        w('    <indexes length="4">0 1 </indexes>')
        w('    <u64values length="12">10 21 21 10 </u64values>')
        w('  </distances2>')
    if not p.get('nvlink', True):
        # PCIe-only node: hwloc's NVML backend writes no NVLinkBandwidth matrix without NVLink
        return finish(L, p)
    # NVLinkBandwidth (MB/s, uni, per object pair, 0 on the diagonal as in hwloc_dgx.xml)
    objs = [f'OSDev:{x}' for x in gpu_os] + [f'PCIDev:{x}' for x in sw_pci]
    n = len(objs)
    G_ = len(gpu_os)
    mat = [[0]*n for _ in range(n)]
    for i in range(G_):
        if sw_pci:
            for k in range(len(sw_pci)):
                v = p['links_per_switch'][k] * p['mbs_per_link']
                mat[i][G_+k] = v
                mat[G_+k][i] = v
        else:
            for j in range(G_):
                if i != j:
                    mat[i][j] = p['gpu_gpu_mbs']
    w(f'  <distances2hetero nbobjs="{n}" kind="25" name="NVLinkBandwidth">')
    for c in chunks(objs):
        t = ' '.join(c) + ' '
        w(f'    <indexes length="{len(t)}">{t}</indexes>')
    flat = [str(x) for row in mat for x in row]
    for c in chunks(flat):
        t = ' '.join(c) + ' '
        w(f'    <u64values length="{len(t)}">{t}</u64values>')
    w('  </distances2hetero>')
    return finish(L, p)

def finish(L, p):
    L.append('</topology>')
    # hwloc's minimalistic XML parser (used when hwloc lacks libxml2) rejects
    # comments inside the document, so the provenance comment goes after it.
    import textwrap
    body = textwrap.wrap(p['comment'].strip().replace('--', '-'), 100)
    L.append('<!--')
    L.extend('  ' + x for x in body)
    L.append('-->')
    return '\n'.join(L) + '\n'

def kib(gb):
    v = gb * 10**9
    assert v % 1024 == 0
    return v // 1024

COMMON = ('Generated by topology/gen_node_xml.py (python3 topology/gen_node_xml.py topology/systems). '
          'CONSTRUCTED by mbsim, not captured with lstopo: no public lstopo dump of this machine was found '
          '(hardware.md C.3). Modelled on the real hwloc samples in shared/data/formats (hwloc_dgx.xml, '
          'hwloc_pci_gpu_nic_small.xml). Trimmed: one PU per CPU socket; caches, storage, BMC and management/storage '
          'NICs (e.g. BlueField DPUs) omitted. Only what mbsim reads is meaningful: GPU PCI class/vendor, GPUModel, '
          'CUDAGlobalMemorySize (KiB), OpenFabrics NICs, NUMA placement, NVSwitch PCI devices, NVLinkBandwidth (MB/s uni). '
          'PCI device ids other than 10de:2330, 10de:20b2, 15b3:1021, 15b3:101b (quoted in hardware.md C.3) are '
          'unverified or 0000; mbsim ignores them. One PCIe host bridge per GPU+NIC pair, so the GPU-NIC pairing is 1:1. ')

presets = {
 'dgx_h100': dict(product='NVIDIA DGX H100', arch='x86_64', cpu='Intel Xeon Platinum 8480C', sockets=2, gpus=8,
     numa_mem=1024*2**30, pcie_switch=True, link='63.015385', nic_link='63.015385',
     gpu_dev='2330', model='NVIDIA H100 80GB HBM3', mem_kib=kib(80), nic_dev='1021',
     nvswitch=4, sw_dev='22a3', links_per_switch=[5,4,4,5], mbs_per_link=25000,
     comment=COMMON + 'DGX H100: 8 H100 SXM5 80 GB (hardware.md A), 2 sockets, 8 ConnectX-7 400 Gb/s (one per GPU, A note 5), '
       '4 third-generation NVSwitch (A note 4); each GPU has 18 NVLink4 links split 5/4/4/5 over the 4 switches (real NCCL '
       'dump, hardware.md C.3.6), hwloc counts 25000 MB/s per link: 450000 MB/s per GPU.'),
 'h100_sxm': dict(product='NVIDIA HGX H100 8-GPU (H100-SXM-80GB)', arch='x86_64', cpu='x86_64 host CPU', sockets=2, gpus=8,
     numa_mem=1024*2**30, pcie_switch=True, link='63.015385', nic_link='63.015385',
     gpu_dev='2330', model='NVIDIA H100 80GB HBM3', mem_kib=kib(80), nic_dev='1021',
     nvswitch=4, sw_dev='22a3', links_per_switch=[5,4,4,5], mbs_per_link=25000,
     comment=COMMON + 'Generic HGX H100 8-GPU server ("H100-SXM-80GB"): same GPU/NVSwitch/NIC layout as the DGX H100 '
       '(hardware.md A: H100 SXM, 18 NVLink4 links, 1 CX-7 400 Gb/s per GPU).'),
 'dgx_a100': dict(product='NVIDIA DGX A100', arch='x86_64', cpu='AMD EPYC 7742', sockets=2, gpus=8,
     numa_mem=512*2**30, pcie_switch=True, link='31.507692', nic_link='31.507692',
     gpu_dev='20b2', model='NVIDIA A100-SXM4-80GB', mem_kib=kib(80), nic_dev='101b',
     nvswitch=6, sw_dev='1af1', links_per_switch=[2,2,2,2,2,2], mbs_per_link=25000,
     comment=COMMON + 'DGX A100 (NOT in hardware.md A; DGX A100 user guide / widely known spec): 8 A100-SXM4-80GB, 2 AMD '
       'EPYC sockets (real DGX A100 exposes more NUMA nodes with NPS4; modelled as 2), 8 ConnectX-6 HDR 200 Gb/s compute NICs, '
       '6 second-generation NVSwitch; each GPU has 12 NVLink3 links, 2 per switch, 25000 MB/s each: 300000 MB/s per GPU.'),
 'dgx_b200': dict(product='NVIDIA DGX B200', arch='x86_64', cpu='Intel Xeon Platinum 8570', sockets=2, gpus=8,
     numa_mem=1024*2**30, pcie_switch=True, link='63.015385', nic_link='63.015385',
     gpu_dev='2901', model='NVIDIA B200', mem_kib=kib(180), nic_dev='1021',
     nvswitch=2, sw_dev='0000', links_per_switch=[9,9], mbs_per_link=50000,
     comment=COMMON + 'DGX B200: 8 B200 (180 GB usable HBM3e, hardware.md A), 2 sockets, 8 ConnectX-7 400 Gb/s, '
       '2 NVLink-5 switch chips (A); 18 NVLink5 links per GPU split 9/9 (assumed even split), hwloc counts 50000 MB/s per '
       'link: 900000 MB/s per GPU.'),
 'dgx_b300': dict(product='NVIDIA DGX B300', arch='x86_64', cpu='Intel Xeon', sockets=2, gpus=8,
     numa_mem=1024*2**30, pcie_switch=True, link='126.030769', nic_link='126.030769',
     gpu_dev='0000', model='NVIDIA B300', mem_kib=kib(288), nic_dev='1023',
     nvswitch=2, sw_dev='0000', links_per_switch=[9,9], mbs_per_link=50000,
     comment=COMMON + 'DGX B300: 8 B300 (288 GB HBM3e, the GB300 per-GPU figure of hardware.md A; assumed equal for HGX B300), '
       '2 sockets, 8 ConnectX-8 800 Gb/s (A note 5), NVLink5 18 links per GPU; 2 NVLink-5 switch chips assumed as on HGX B200 '
       '(not stated in hardware.md): 900000 MB/s per GPU. ' + 'PCIe links to the GPU and the CX-8 are written as Gen6 x16 (126 GB/s per direction): hardware.md A note 6 records a conflict (Klockwood: Blackwell GPUs at PCIe Gen6; ml-engineering: Gen6 on the NIC side only); mbsim reads the slowest link between a GPU and its NIC as a cap on its NIC rate, and Gen6 keeps the 800 Gb/s NIC uncapped (ASSUMPTION). '),
 'gb200_nvl72': dict(product='NVIDIA GB200 NVL72 compute tray', arch='aarch64', cpu='NVIDIA Grace', sockets=2, gpus=4,
     numa_mem=480*10**9, pcie_switch=False, link='63.015385', nic_link='63.015385',
     gpu_dev='2941', model='NVIDIA GB200', mem_kib=kib(186), nic_dev='1021',
     nvswitch=0, gpu_gpu_mbs=300000,
     comment=COMMON + 'GB200 NVL72 compute tray (one mbsim node): 2 Grace CPUs as 2 NUMA nodes (a real tray also exposes '
       'GPU HBM as extra NUMA nodes; omitted), 4 B200-class GPUs (186 GB, hardware.md A), 4 ConnectX-7 400 Gb/s, one per GPU '
       '(A note 5). The 18 NVLink5 links per GPU go to NVSwitch chips in separate switch trays, which are not PCI devices of '
       'this tray, so there are no NVSwitch objects. To keep the per-GPU NVLink bandwidth (row sum) right, the matrix '
       'lists 300000 MB/s between each pair of tray GPUs (900000 MB/s = 18 x 50000 spread over the 3 peers): a modelling '
       'device, not what real hwloc writes for a tray.'),
 'gb300_nvl72': dict(product='NVIDIA GB300 NVL72 compute tray', arch='aarch64', cpu='NVIDIA Grace', sockets=2, gpus=4,
     numa_mem=480*10**9, pcie_switch=False, link='126.030769', nic_link='126.030769',
     gpu_dev='0000', model='NVIDIA GB300', mem_kib=kib(288), nic_dev='1023',
     nvswitch=0, gpu_gpu_mbs=300000,
     comment=COMMON + 'GB300 NVL72 compute tray (one mbsim node): 2 Grace CPUs as 2 NUMA nodes, 4 Blackwell Ultra GPUs '
       '(288 GB HBM3e, hardware.md A), 4 ConnectX-8 800 Gb/s (2 mezzanine boards x 2 CX-8, A note 5). NVSwitches are in '
       'separate switch trays, so none here; the matrix lists 300000 MB/s between each pair of tray GPUs so that the row '
       'sum is 900000 MB/s = 18 NVLink5 links x 50000 (a modelling device, not real hwloc output). ' + 'PCIe links to the GPU and the CX-8 are written as Gen6 x16 (126 GB/s per direction): hardware.md A note 6 records a conflict (Klockwood: Blackwell GPUs at PCIe Gen6; ml-engineering: Gen6 on the NIC side only); mbsim reads the slowest link between a GPU and its NIC as a cap on its NIC rate, and Gen6 keeps the 800 Gb/s NIC uncapped (ASSUMPTION). '),
}

# Variants (same script, same shape; each says what differs and where its numbers come from)
presets['dgx_h100_4nic'] = dict(presets['dgx_h100'], product='NVIDIA DGX H100 variant, 4 compute NICs', gpus_per_nic=2,
     comment=COMMON.replace('One PCIe host bridge per GPU+NIC pair, so the GPU-NIC pairing is 1:1. ',
       'One PCIe host bridge and switch per 2 GPUs + 1 NIC, so each NIC is shared by the 2 GPUs behind its switch. ') +
       'DGX H100 as dgx_h100.xml but with 4 ConnectX-7 400 Gb/s compute NICs for 8 GPUs (a 2-GPUs-per-NIC build; '
       'ASSUMPTION: no public lstopo of such a node): NVLink and GPUs as DGX H100 (hardware.md A, C.3.6).')
presets['hgx_h800'] = dict(presets['h100_sxm'], product='NVIDIA HGX H800 8-GPU', model='NVIDIA H800',
     links_per_switch=[2, 2, 2, 2],
     comment=COMMON + 'HGX H800 8-GPU: H100 silicon with NVLink cut to 400 GB/s bidirectional = 200 GB/s per direction '
       '(hardware.md A measured fabric table, NVIDIA/nccl#1374), written as 8 NVLink4 links of 25000 MB/s, 2 to each of '
       '4 NVSwitch gen3 (split ASSUMED even); one ConnectX-7 400 Gb/s per GPU (hardware.md DeepEP V1 notes: H800 with one '
       'CX7 400 Gb/s per GPU).')
presets['hgx_h200'] = dict(presets['h100_sxm'], product='NVIDIA HGX H200 8-GPU', model='NVIDIA H200',
     mem_kib=141 * 10**9 // 1024, gpu_dev='2335',
     comment=COMMON + 'HGX H200 8-GPU: H200 SXM 141 GB HBM3e (hardware.md A), NVLink4 18 links 450 GB/s per GPU through '
       '4 NVSwitch gen3 (A note 4), one ConnectX-7 400 Gb/s per GPU (A note 5). PCI id 10de:2335 unverified.')
presets['dgx_a100_40gb'] = dict(presets['dgx_a100'], product='NVIDIA DGX A100 (40 GB)', model='NVIDIA A100-SXM4-40GB',
     mem_kib=kib(40), gpu_dev='20b0',
     comment=COMMON + 'DGX A100 with the 40 GB A100-SXM4 (first DGX A100 build; DGX A100 user guide, not in hardware.md A): '
       'as dgx_a100.xml except 40 GB HBM2 per GPU. PCI id 10de:20b0 unverified.')

presets['hgx_h100_96gb'] = dict(presets['h100_sxm'], product='HGX H100 8-GPU with 96 GB HBM2e (Grand Teton class)',
     model='NVIDIA H100 96GB HBM2e', mem_kib=kib(96), gpu_dev='0000',
     comment=COMMON + 'H100 SXM with 96 GB HBM2e, 2.4 TB/s, default power limit 500 W of a 700 W TDP, 8 GPUs per host fully '
       'connected with NVLink, 400 Gb/s RDMA per GPU: the Grand Teton hosts of pytorch/torchtitan '
       'benchmarks/llama3_h100_202412_torchtitan.md ("Hardware"). NVLink and NVSwitch as h100_sxm.xml (18 NVLink4 links, '
       '5/4/4/5 over 4 NVSwitch gen3: ASSUMED the same HGX baseboard), one ConnectX-7 400 Gb/s per GPU. The GPUModel '
       'string is ASSUMED (no nvidia-smi output of this part was found); PCI device id 0000 (unknown).')
presets['l40s_pcie8'] = dict(product='8 x L40S PCIe server (constructed)', arch='x86_64', cpu='x86_64 host CPU', sockets=2,
     gpus=8, numa_mem=512*2**30, pcie_switch=True, link='31.507692', nic_link='31.507692',
     gpu_dev='26b9', model='NVIDIA L40S', mem_kib=kib(48), nic_dev='1021', gpus_per_nic=2, nvswitch=0, nvlink=False,
     comment=COMMON.replace('One PCIe host bridge per GPU+NIC pair, so the GPU-NIC pairing is 1:1. ',
       'One PCIe host bridge and switch per 2 GPUs + 1 NIC, so each NIC is shared by the 2 GPUs behind its switch. ') +
       'PCIe-only 8-GPU L40S node: L40S = Ada Lovelace, 48 GB GDDR6, 864 GB/s, PCIe Gen4 x16 (64 GB/s bidirectional), '
       'no NVLink, 350 W (NVIDIA L40S datasheet as reproduced in reseller tables). No NVLinkBandwidth matrix, so the '
       'GPUs of the node talk over PCIe. ASSUMED build (no public lstopo of an L40S server found): 2 sockets, a Gen4 '
       'PCIe switch per 2 GPUs and 1 ConnectX-7 400 Gb/s NIC (links written as Gen4 x16, 31.5 GB/s). PCI id 10de:26b9 '
       'unverified.')

for name, p in presets.items():
    with open(os.path.join(OUT, name + '.xml'), 'w') as f:
        f.write(node(p))
