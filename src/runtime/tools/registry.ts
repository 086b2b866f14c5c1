/**
 * Tools grouped into named toolsets (SPEC RUN-2, LOC-5, LOC-6). A session's frozen policy names
 * toolsets; the registry turns the names into the tools the turn may call, in a stable order, and
 * into exactly the `tools` array the model is shown. An unknown name is an error, never dropped.
 */
import type { JsonSchema, ToolDefinition } from '../types.js';
import { clarifyTool } from './clarify.js';
import { delegateTool } from './delegate.js';
import { createJobTools } from './jobs.js';
import { projectTools } from './project.js';
import { terminalTool } from './terminal.js';

/** The toolsets of a plain session (cli source, no explicit toolsets). */
export const DEFAULT_TOOLSETS: readonly string[] = ['terminal', 'clarify'];

export interface Toolset {
  name: string;
  /** What the toolset is for, shown by `list_toolsets` and runtime.describe. */
  description: string;
  tools: readonly ToolDefinition[];
}

/** A toolset name no one registered. `reason` maps onto the wire's invalid_params. */
export class UnknownToolsetError extends Error {
  readonly reason = 'invalid_params';
  constructor(
    readonly toolset: string,
    readonly known: readonly string[],
  ) {
    super(`Unknown toolset "${toolset}". Known toolsets: ${known.join(', ')}.`);
    this.name = 'UnknownToolsetError';
  }
}

/** Registering a name twice, or a tool whose name another toolset already uses. */
export class ToolsetConflictError extends Error {
  readonly reason = 'toolset_conflict';
  constructor(message: string) {
    super(message);
    this.name = 'ToolsetConflictError';
  }
}

/** One entry of the OpenAI chat-completions `tools` array. */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

export class ToolRegistry {
  private readonly toolsets = new Map<string, Toolset>();

  /** Adds a toolset (plugins call this). Each tool must name this toolset and have a unique name. */
  register(toolset: Toolset): this {
    if (!/^[a-z][a-z0-9_]*$/.test(toolset.name)) {
      throw new ToolsetConflictError(`Toolset name "${toolset.name}" must be lower_snake_case.`);
    }
    if (this.toolsets.has(toolset.name)) {
      throw new ToolsetConflictError(`Toolset "${toolset.name}" is already registered.`);
    }
    const taken = new Set([...this.toolsets.values()].flatMap((t) => t.tools.map((tool) => tool.name)));
    for (const tool of toolset.tools) {
      if (tool.toolset !== toolset.name) {
        throw new ToolsetConflictError(
          `Tool "${tool.name}" says it belongs to "${tool.toolset}", not "${toolset.name}".`,
        );
      }
      if (taken.has(tool.name)) throw new ToolsetConflictError(`Tool name "${tool.name}" is already taken.`);
      taken.add(tool.name);
    }
    this.toolsets.set(toolset.name, toolset);
    return this;
  }

  has(name: string): boolean {
    return this.toolsets.has(name);
  }

  /** Registered toolsets in registration order. */
  list(): Toolset[] {
    return [...this.toolsets.values()];
  }

  /** Throws UnknownToolsetError naming the first unknown name. Changes nothing. */
  validate(names: readonly string[]): void {
    for (const name of names) {
      if (!this.toolsets.has(name)) throw new UnknownToolsetError(name, [...this.toolsets.keys()]);
    }
  }

  /**
   * The tools of the named toolsets, in registration order whatever order the names come in, each
   * once. The order matters: it is the order the model sees, and a stable prompt caches well.
   */
  resolve(names: readonly string[]): ToolDefinition[] {
    this.validate(names);
    const wanted = new Set(names);
    return this.list()
      .filter((t) => wanted.has(t.name))
      .flatMap((t) => t.tools);
  }
}

/** Exactly the `tools` array sent to the model for these tools. */
export function toolSchemas(tools: readonly ToolDefinition[]): ToolSchema[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** A registry holding the built-in toolsets: terminal, clarify, project, jobs, desktop_ui, catalog, delegation. */
export function createBuiltinRegistry(): ToolRegistry {
  const registry = new ToolRegistry();
  registry
    .register({
      name: 'terminal',
      description: 'Run shell commands in the working directory.',
      tools: [terminalTool],
    })
    .register({
      name: 'clarify',
      description: 'Ask the user a question and wait for the answer.',
      tools: [clarifyTool],
    })
    .register({
      name: 'project',
      description: 'Read, list and write files inside the working directory.',
      tools: projectTools,
    })
    .register({
      name: 'jobs',
      description: 'Schedule messages to this session for later (with approval), list and remove them.',
      tools: createJobTools(),
    })
    .register({
      name: 'desktop_ui',
      description: 'Talk to the desktop app window (gui sessions only).',
      tools: [showNoticeTool],
    })
    .register({
      name: 'catalog',
      description: 'Describe what this agent can do: its toolsets and tools.',
      tools: [createListToolsetsTool(registry)],
    })
    .register({
      name: 'delegation',
      description: 'Hand a task to a background session that reports back when done.',
      tools: [delegateTool],
    });
  return registry;
}

/** desktop_ui: a notice the desktop app shows beside the conversation. The runtime acknowledges it. */
const showNoticeTool: ToolDefinition = {
  name: 'show_notice',
  toolset: 'desktop_ui',
  description: 'Show a short notice to the user in the desktop app, beside the conversation.',
  parameters: {
    type: 'object',
    properties: {
      message: { type: 'string', description: 'The notice, one or two sentences.' },
      level: { type: 'string', enum: ['info', 'success', 'warning'], description: 'How it is styled.' },
    },
    required: ['message'],
    additionalProperties: false,
  },
  run(args) {
    if (typeof args.message !== 'string' || args.message.trim() === '') {
      return Promise.resolve({ content: '`message` must be a non-empty string.', isError: true });
    }
    const level = args.level === 'success' || args.level === 'warning' ? args.level : 'info';
    return Promise.resolve({ content: `Notice shown (${level}): ${args.message}` });
  },
};

/** catalog: lets the model (and the user, through it) see which toolsets exist and what they hold. */
function createListToolsetsTool(registry: ToolRegistry): ToolDefinition {
  return {
    name: 'list_toolsets',
    toolset: 'catalog',
    description: 'List the toolsets this gateway knows, what each is for, and the tools in each.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    run() {
      const lines = registry
        .list()
        .map((t) => `${t.name}: ${t.description} Tools: ${t.tools.map((tool) => tool.name).join(', ')}.`);
      return Promise.resolve({ content: lines.join('\n') });
    },
  };
}

/** The process-wide registry of built-in (and plugin) toolsets. */
export const toolRegistry: ToolRegistry = createBuiltinRegistry();

/** The tools of the named toolsets from the process-wide registry. */
export function resolveToolsets(names: readonly string[]): ToolDefinition[] {
  return toolRegistry.resolve(names);
}
