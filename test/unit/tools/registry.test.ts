import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TOOLSETS,
  ToolRegistry,
  ToolsetConflictError,
  UnknownToolsetError,
  createBuiltinRegistry,
  resolveToolsets,
  toolSchemas,
} from '../../../src/runtime/tools/registry.js';
import type { ToolDefinition } from '../../../src/runtime/types.js';
import { harness, tempDir } from './harness.js';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';

const names = (tools: ToolDefinition[]) => tools.map((t) => t.name);

describe('RUN-2 / LOC-6 tool registry and toolsets', () => {
  it('resolves the default toolsets of a plain session', () => {
    expect(DEFAULT_TOOLSETS).toEqual(['terminal', 'clarify']);
    expect(names(resolveToolsets(DEFAULT_TOOLSETS))).toEqual(['terminal', 'clarify']);
  });

  it('knows the LOC-6 toolsets and returns tools in a stable order whatever the request order', () => {
    const all = ['catalog', 'desktop_ui', 'jobs', 'project', 'clarify', 'terminal'];
    const expected = [
      'terminal',
      'clarify',
      'read_file',
      'list_directory',
      'write_file',
      'schedule_job',
      'list_jobs',
      'remove_job',
      'show_notice',
      'list_toolsets',
    ];
    expect(names(resolveToolsets(all))).toEqual(expected);
    expect(names(resolveToolsets([...all].reverse()))).toEqual(expected);
    expect(names(resolveToolsets(['terminal', 'terminal']))).toEqual(['terminal']);
    expect(resolveToolsets([])).toEqual([]);
  });

  it('rejects an unknown toolset by name, listing the known ones', () => {
    let caught: unknown;
    try {
      resolveToolsets(['terminal', 'browser']);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(UnknownToolsetError);
    const error = caught as UnknownToolsetError;
    expect(error.reason).toBe('invalid_params');
    expect(error.toolset).toBe('browser');
    expect(error.known).toEqual([
      'terminal',
      'clarify',
      'project',
      'jobs',
      'desktop_ui',
      'catalog',
      'delegation',
    ]);
    expect(error.message).toBe(
      'Unknown toolset "browser". Known toolsets: terminal, clarify, project, jobs, desktop_ui, catalog, delegation.',
    );
  });

  it('produces exactly the OpenAI tools array', () => {
    const schemas = toolSchemas(resolveToolsets(['clarify']));
    expect(schemas).toEqual([
      {
        type: 'function',
        function: {
          name: 'clarify',
          description: expect.stringContaining('Ask the user a question') as string,
          parameters: {
            type: 'object',
            properties: {
              question: { type: 'string', description: expect.any(String) as string },
              choices: {
                type: 'array',
                items: { type: 'string' },
                description: expect.any(String) as string,
              },
              multi_select: { type: 'boolean', description: expect.any(String) as string },
            },
            required: ['question'],
            additionalProperties: false,
          },
        },
      },
    ]);
    const [terminal] = toolSchemas(resolveToolsets(['terminal']));
    expect(Object.keys(terminal ?? {})).toEqual(['type', 'function']);
    expect(Object.keys(terminal?.function ?? {})).toEqual(['name', 'description', 'parameters']);
    expect(terminal?.function.parameters.required).toEqual(['command']);
    expect(JSON.parse(JSON.stringify(terminal))).toEqual(terminal);
  });

  it('lets plugins register toolsets, and refuses duplicates and mislabelled tools', () => {
    const registry = createBuiltinRegistry();
    const echo: ToolDefinition = {
      name: 'echo_back',
      toolset: 'echo',
      description: 'Echoes its input.',
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
      run: (args) => Promise.resolve({ content: String(args.text) }),
    };
    registry.register({ name: 'echo', description: 'Test plugin.', tools: [echo] });
    expect(names(registry.resolve(['echo', 'terminal']))).toEqual(['terminal', 'echo_back']);
    expect(() => registry.register({ name: 'echo', description: 'again', tools: [] })).toThrow(
      ToolsetConflictError,
    );
    expect(() => registry.register({ name: 'other', description: 'x', tools: [echo] })).toThrow(
      ToolsetConflictError,
    );
    expect(() => registry.register({ name: 'Bad Name', description: 'x', tools: [] })).toThrow(
      ToolsetConflictError,
    );
    expect(() => new ToolRegistry().resolve(['terminal'])).toThrow(UnknownToolsetError);
  });

  it('catalog lists the toolsets; desktop_ui acknowledges a notice', async () => {
    const { context } = harness(new PromptBroker(), { cwd: tempDir() });
    const [listToolsets] = resolveToolsets(['catalog']);
    const listing = await listToolsets?.run({}, context);
    expect(listing?.content).toContain('terminal: Run shell commands');
    expect(listing?.content).toContain('Tools: read_file, list_directory, write_file.');
    const [showNotice] = resolveToolsets(['desktop_ui']);
    expect(await showNotice?.run({ message: 'Build finished', level: 'success' }, context)).toEqual({
      content: 'Notice shown (success): Build finished',
    });
    expect(await showNotice?.run({}, context)).toMatchObject({ isError: true });
  });
});
