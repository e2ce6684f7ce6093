#!/usr/bin/env python3
"""The batch-engine recipes of docs/recipes/, run here as far as one
machine allows: each recipe's own commands, with the variables its engine
sets for each worker, give shard files whose `merge` has the verdict and
counts of one unsharded campaign.

usage: shard_recipes.py POLLEN_BINARY RECIPES_DIR

- GitHub Actions (github-actions.yml): every step of the matrix job and of
  the verdict job that runs $TESTS, once per matrix value, with the
  workflow's env and ${{ matrix.* }} and ${{ strategy.job-total }}
  filled in.
- Kubernetes (kubernetes-indexed-job.yaml): the Indexed Job's container
  command once per completion index (JOB_COMPLETION_INDEX, the manifest's
  env), its volume a directory here; then the merge Job's initContainer
  and container. POLLEN_SHARD_COUNT must equal .spec.completions.
- Slurm (slurm-array.sh): the script once per task of its #SBATCH --array
  range, with SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and _COUNT as sbatch
  sets them; then the merge command its header gives.
- GNU parallel (gnu-parallel.sh): the script itself, with GNU parallel if
  it is installed, otherwise with a stand-in that runs the jobs one after
  another with PARALLEL_SEQ set as parallel does.

The campaign is the one in CAMPAIGN below: a known bug found on a few
seeds, its pl_sometimes sites judged over the union of the shards, and a
clean scenario.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

CAMPAIGN = ('run bug_atomic_waker fix_repl_ack outbox --seeds 0..239 '
            '--keep-going --no-shrink')

# Nothing of this machine's own batch engine may leak into a worker.
ENGINE_VARS = re.compile(r'^(POLLEN_SHARD.*|JOB_COMPLETION_INDEX|SLURM_.*|PARALLEL_.*|'
                         r'CI_NODE_.*|CIRCLE_NODE_.*|BUILDKITE_PARALLEL_.*)$')


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not ENGINE_VARS.match(k)}
    env.update(extra)
    return env


def sh(cmd, cwd, env, shell='bash'):
    """Runs cmd through the shell as the engine would; returns (rc, stdout)."""
    p = subprocess.run([shell, '-c', cmd], cwd=cwd, env=clean_env(env),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    return p.returncode, p.stdout, p.stderr


def fail(recipe, msg):
    print(f'FAIL {recipe}: {msg}')
    sys.exit(1)


# ---- The reference: one unsharded campaign ---------------------------------

def reference(tests, work):
    d = os.path.join(work, 'one')
    os.mkdir(d)
    rc, out, _ = sh(f'{tests} {CAMPAIGN} --json', d, {})
    summary = json.loads(out.strip().splitlines()[-1])['summary']
    assert summary['exit'] == rc, (summary['exit'], rc)
    want = {}
    for sc in summary['scenarios']:
        decisions = {k: (v['consulted'], v['deviated'])
                     for k, v in sc['coverage']['decisions'].items()}
        first = sc['first']
        want[sc['scenario']] = {
            'runs': sc['runs'], 'findings': sc['findings'],
            'first': (first['kind'], first['seed']) if first else None,
            'decisions': decisions,
        }
    # The campaign must show what a merge can get wrong.
    assert rc != 0 and any(w['first'] for w in want.values()), 'no finding to merge'
    assert any(w['first'] is None for w in want.values()), 'no clean scenario'
    return rc, want


# ---- What a merge printed ---------------------------------------------------

SUMMARY = re.compile(r'^(\w+): (\d+) shards? merged, (\d+) runs, (\d+) findings?')
FIRST = re.compile(r'^FINDING (\w+) in (\w+) \(seed (\d+),')
DECISIONS = re.compile(r'^  decisions \(consulted / deviated from production\): (.*?)(;|$)')


def merged(text):
    got, scenario = {}, None
    firsts = {}
    for line in text.splitlines():
        m = FIRST.match(line)
        if m:
            firsts[m.group(2)] = (m.group(1), int(m.group(3)))
        m = SUMMARY.match(line)
        if m:
            scenario = m.group(1)
            got[scenario] = {'shards': int(m.group(2)), 'runs': int(m.group(3)),
                             'findings': int(m.group(4)),
                             'first': firsts.get(scenario), 'decisions': {}}
        m = DECISIONS.match(line)
        if m and scenario is not None:
            for part in m.group(1).split(', '):
                name, counts = part.rsplit(' ', 3)[0], part.split(' ')[-3:]
                got[scenario]['decisions'][name] = (int(counts[0]), int(counts[2]))
    return got


def check(recipe, rc, text, nshards, ref_rc, want):
    if rc != ref_rc:
        fail(recipe, f'merge exits {rc}, one campaign {ref_rc}\n{text}')
    got = merged(text)
    if set(got) != set(want):
        fail(recipe, f'merged scenarios {sorted(got)}, expected {sorted(want)}\n{text}')
    for name, w in want.items():
        g = got[name]
        if g['shards'] != nshards:
            fail(recipe, f'{name}: {g["shards"]} shards merged, expected {nshards}')
        for key in ('runs', 'findings', 'first'):
            if g[key] != w[key]:
                fail(recipe, f'{name}: merged {key} {g[key]}, one campaign {w[key]}')
        consulted = {k: v for k, v in w['decisions'].items() if v[0] > 0}
        if g['decisions'] != consulted:
            fail(recipe, f'{name}: merged decisions {g["decisions"]}, one campaign {consulted}')
    print(f'ok {recipe}: {nshards} shards, exit {rc}, ' +
          ', '.join(f'{n} {w["runs"]} runs {w["findings"]} findings' for n, w in want.items()))


def shard_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith('shard-') and f.endswith('.json'))


# ---- GitHub Actions ----------------------------------------------------------

def github(recipes, tests, work, ref):
    recipe = 'github-actions.yml'
    wf = yaml.safe_load(open(os.path.join(recipes, recipe)))
    d = os.path.join(work, 'github')
    os.mkdir(d)
    env = {k: str(v) for k, v in wf['env'].items()}
    env.update(TESTS=tests, CAMPAIGN=CAMPAIGN)
    job = wf['jobs']['shard']
    values = job['strategy']['matrix']['shard']

    def fill(text, value):
        text = text.replace('${{ matrix.shard }}', str(value))
        return text.replace('${{ strategy.job-total }}', str(len(values)))

    ran = 0
    for v in values:
        job_env = dict(env, **{k: fill(str(x), v) for k, x in job['env'].items()})
        for step in job['steps']:
            if '$TESTS' in step.get('run', ''):
                rc, _, err = sh(fill(step['run'], v), d, job_env)
                if rc != 0 or f'from POLLEN_SHARD={v}/{len(values)}' not in err:
                    fail(recipe, f'shard {v}: exit {rc}\n{err}')
                ran += 1
    if ran != len(values) or len(shard_files(d)) != len(values):
        fail(recipe, f'{ran} shard steps ran for {len(values)} matrix values')
    verdict = wf['jobs']['verdict']
    if verdict.get('needs') != 'shard':
        fail(recipe, 'the verdict job does not wait for the shards')
    steps = [s for s in verdict['steps'] if '$TESTS' in s.get('run', '')]
    rc, out, _ = sh(steps[0]['run'], d, env)
    check(recipe, rc, out, len(values), *ref)


# ---- Kubernetes ----------------------------------------------------------------

def container_env(c):
    return {e['name']: str(e['value']) for e in c.get('env', [])}


def pod_run(c, d, extra, tests):
    """A container's sh -c command, its volume mounted at d."""
    assert c['command'][:2] == ['sh', '-c'], c['command']
    mount = c['volumeMounts'][0]['mountPath']
    cmd = c['command'][2].replace(mount, d)
    env = dict(container_env(c), **extra)
    if 'TESTS' in env:
        env['TESTS'] = tests
    env['CAMPAIGN'] = CAMPAIGN
    return sh(cmd, d, env, shell='sh')


def kubernetes(recipes, tests, work, ref):
    recipe = 'kubernetes-indexed-job.yaml'
    docs = list(yaml.safe_load_all(open(os.path.join(recipes, recipe))))
    shards = next(x for x in docs if x['metadata']['name'] == 'pollen-shards')
    merge = next(x for x in docs if x['metadata']['name'] == 'pollen-merge')
    d = os.path.join(work, 'kubernetes')
    os.mkdir(d)
    spec = shards['spec']
    if spec['completionMode'] != 'Indexed':
        fail(recipe, 'the shards Job is not Indexed')
    n = spec['completions']
    c = spec['template']['spec']['containers'][0]
    if container_env(c).get('POLLEN_SHARD_COUNT') != str(n):
        fail(recipe, f'POLLEN_SHARD_COUNT is not .spec.completions ({n})')
    # The merge's initContainer must wait until every shard's file is there.
    init = merge['spec']['template']['spec']['initContainers'][0]
    for i in range(n):
        rc, _, err = pod_run(c, d, {'JOB_COMPLETION_INDEX': str(i)}, tests)
        if rc != 0 or f'shard {i + 1}/{n} from JOB_COMPLETION_INDEX={i}' not in err:
            fail(recipe, f'index {i}: exit {rc}\n{err}')
        if i + 1 < n and subprocess.run(
                ['timeout', '3'] + ['sh', '-c', init['command'][2].replace(
                    init['volumeMounts'][0]['mountPath'], d)],
                env=clean_env(container_env(init))).returncode == 0:
            fail(recipe, f'the merge started with {i + 1} of {n} shards')
    rc, _, err = pod_run(init, d, {}, tests)
    if rc != 0:
        fail(recipe, f'the merge still waits with every shard done\n{err}')
    rc, out, _ = pod_run(merge['spec']['template']['spec']['containers'][0], d, {}, tests)
    check(recipe, rc, out, n, *ref)


# ---- Slurm ----------------------------------------------------------------------

def slurm(recipes, tests, work, ref, array=None):
    recipe = 'slurm-array.sh'
    path = os.path.join(recipes, recipe)
    text = open(path).read()
    spec = array or re.search(r'^#SBATCH --array=(\S+)', text, re.M).group(1)
    m = re.fullmatch(r'(\d+)-(\d+)(?::(\d+))?', spec)
    lo, hi, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
    ids = list(range(lo, hi + 1, step))
    d = os.path.join(work, 'slurm-' + spec.replace(':', '_'))
    os.mkdir(d)
    for i, task in enumerate(ids):
        env = {'SLURM_ARRAY_TASK_ID': str(task), 'SLURM_ARRAY_TASK_MIN': str(lo),
               'SLURM_ARRAY_TASK_MAX': str(ids[-1]), 'SLURM_ARRAY_TASK_STEP': str(step),
               'SLURM_ARRAY_TASK_COUNT': str(len(ids)), 'SLURM_ARRAY_JOB_ID': '4242',
               'SLURM_CPUS_PER_TASK': '2', 'TESTS': tests, 'CAMPAIGN': CAMPAIGN}
        rc, _, err = sh(f'bash {shlex.quote(path)}', d, env)
        if f'shard {i + 1}/{len(ids)} from SLURM_ARRAY_TASK_ID={task}' not in err:
            fail(recipe, f'task {task}: exit {rc}\n{err}')
    merge = re.search(r'--wrap "(\./mytests merge [^"]*)"', text).group(1)
    rc, out, _ = sh(merge.replace('./mytests', tests), d, {})
    check(f'{recipe} --array={spec}', rc, out, len(ids), *ref)


# ---- GNU parallel ------------------------------------------------------------------

# What the recipe needs of GNU parallel: -j N and a command template, the
# arguments on stdin, {} replaced, PARALLEL_SEQ set, run by a shell.
STAND_IN = r'''#!/usr/bin/env python3
import os, subprocess, sys
args = sys.argv[1:]
assert args[0] == '-j', args
template = args[2]
rc = 0
for seq, arg in enumerate(sys.stdin.read().split(), 1):
    env = dict(os.environ, PARALLEL_SEQ=str(seq))
    rc |= subprocess.run(['sh', '-c', template.replace('{}', arg)], env=env).returncode
sys.exit(1 if rc else 0)
'''


def gnu_parallel(recipes, tests, work, ref):
    recipe = 'gnu-parallel.sh'
    d = os.path.join(work, 'parallel')
    os.mkdir(d)
    env = {'TESTS': tests, 'CAMPAIGN': CAMPAIGN, 'SHARDS': '3'}
    if shutil.which('parallel') is None:
        bindir = os.path.join(work, 'bin')
        os.makedirs(bindir, exist_ok=True)
        stand_in = os.path.join(bindir, 'parallel')
        with open(stand_in, 'w') as f:
            f.write(STAND_IN)
        os.chmod(stand_in, 0o755)
        env['PATH'] = bindir + os.pathsep + os.environ['PATH']
        recipe += ' (parallel stand-in)'
    rc, out, err = sh(f'bash {shlex.quote(os.path.join(recipes, "gnu-parallel.sh"))}', d, env)
    for k in (1, 2, 3):
        if f'shard {k}/3 from PARALLEL_SEQ={k}' not in err:
            fail(recipe, f'shard {k} not from PARALLEL_SEQ\n{err}')
    check(recipe, rc, out, 3, *ref)


def main():
    tests, recipes = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix='pollen-recipes-')
    try:
        ref = reference(tests, work)
        github(recipes, tests, work, ref)
        kubernetes(recipes, tests, work, ref)
        slurm(recipes, tests, work, ref)
        # Arrays numbered from 1 and with a step: the same shards.
        slurm(recipes, tests, work, ref, array='1-5')
        slurm(recipes, tests, work, ref, array='10-22:4')
        gnu_parallel(recipes, tests, work, ref)
    finally:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
