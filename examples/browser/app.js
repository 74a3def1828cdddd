// The demo page's script: fastify-a2a/client (served under /demo/client/) over the
// agent card's WebSocket interface. Plain JavaScript, so the page needs no build.
import {
  A2AClientError, ConnectionError, StreamIncompleteError, UnexpectedStatusError, WEBSOCKET_BINDING_URI, createClient
} from '/demo/client/index.js'

const $ = (selector) => document.querySelector(selector)
const TERMINAL = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']

let client
/** The task on screen: its id, last state, and its artifacts' parts by artifact id. */
let task = { id: undefined, state: undefined, artifacts: new Map() }
let streaming = false
let chunks = 0

const messageId = () => globalThis.crypto?.randomUUID?.() ?? `m-${Date.now()}-${Math.random().toString(36).slice(2)}`
const stateLabel = (state) => state.replace('TASK_STATE_', '').replace('_', '-').toLowerCase()

function setConnection (text, kind) {
  const pill = $('#connection')
  pill.textContent = text
  pill.className = `pill pill-${kind}`
}

function updateControls () {
  const ready = client !== undefined
  for (const button of document.querySelectorAll('.chip, #send, #missing')) button.disabled = !ready || streaming
  $('#cancel').disabled = !ready || task.id === undefined || task.state === undefined || TERMINAL.includes(task.state)
}

function setState (state) {
  task.state = state
  const badge = $('#task-state')
  badge.textContent = stateLabel(state)
  badge.className = `badge badge-${stateLabel(state)}`
  updateControls()
}

function resetTask () {
  task = { id: undefined, state: undefined, artifacts: new Map() }
  chunks = 0
  $('#task-id').textContent = '—'
  $('#chunk-count').textContent = '0'
  $('#status-message').textContent = '—'
  $('#task-state').textContent = 'idle'
  $('#task-state').className = 'badge badge-idle'
  $('#reply').hidden = true
  $('#artifacts').replaceChildren(Object.assign(document.createElement('p'), { className: 'empty', textContent: 'Artifacts appear here as they stream in.' }))
  $('#events').replaceChildren()
  $('#event-count').textContent = '0'
  hideError()
}

function logEvent (kind, summary) {
  const item = document.createElement('li')
  item.dataset.kind = kind
  item.append(Object.assign(document.createElement('span'), { className: 'kind', textContent: kind }), ` ${summary}`)
  const list = $('#events')
  list.append(item)
  list.scrollTop = list.scrollHeight
  $('#event-count').textContent = String(list.children.length)
}

const textOf = (parts) => parts.map(part => part.text ?? (part.data === undefined ? `[${part.url ?? 'file'}]` : JSON.stringify(part.data))).join('\n')

function renderArtifact (artifact, append) {
  const parts = append ? [...(task.artifacts.get(artifact.artifactId) ?? []), ...artifact.parts] : [...artifact.parts]
  task.artifacts.set(artifact.artifactId, parts)
  let block = document.querySelector(`[data-artifact-id="${CSS.escape(artifact.artifactId)}"]`)
  if (block === null) {
    $('#artifacts .empty')?.remove()
    block = document.createElement('figure')
    block.className = 'artifact'
    block.dataset.artifactId = artifact.artifactId
    block.append(Object.assign(document.createElement('figcaption'), { textContent: artifact.name ?? artifact.artifactId }), document.createElement('pre'))
    $('#artifacts').append(block)
  }
  block.querySelector('pre').textContent = textOf(parts)
}

function showStatusMessage (status) {
  if (status.message !== undefined) $('#status-message').textContent = textOf(status.message.parts)
}

function render (event) {
  if (event.task !== undefined) {
    task.id = event.task.id
    $('#task-id').textContent = event.task.id
    setState(event.task.status.state)
    showStatusMessage(event.task.status)
    logEvent('task', stateLabel(event.task.status.state))
  } else if (event.statusUpdate !== undefined) {
    setState(event.statusUpdate.status.state)
    showStatusMessage(event.statusUpdate.status)
    logEvent('statusUpdate', stateLabel(event.statusUpdate.status.state))
  } else if (event.artifactUpdate !== undefined) {
    const { artifact, append } = event.artifactUpdate
    chunks++
    $('#chunk-count').textContent = String(chunks)
    renderArtifact(artifact, append === true)
    logEvent('artifactUpdate', `${artifact.artifactId}: ${textOf(artifact.parts)}`)
  } else if (event.message !== undefined) {
    const reply = $('#reply')
    reply.textContent = textOf(event.message.parts)
    reply.hidden = false
    logEvent('message', textOf(event.message.parts))
  }
}

function hideError () {
  $('#error').hidden = true
}

/** Every client error as a title, a sentence and its details. */
function describeError (error) {
  if (error instanceof A2AClientError) {
    const details = [['code', String(error.code)], ['domain', error.domain], ...Object.entries(error.metadata)]
    return { title: `${error.reason ?? 'JSON-RPC error'} · ${error.code}`, message: error.message, details }
  }
  if (error instanceof UnexpectedStatusError) {
    return { title: `HTTP ${error.status}`, message: error.message, details: [['www-authenticate', error.wwwAuthenticate]] }
  }
  if (error instanceof StreamIncompleteError) {
    return { title: 'Stream cut short', message: error.message, details: [['task', error.taskId], ['events received', String(error.received)]] }
  }
  if (error instanceof ConnectionError) {
    return { title: 'Connection problem', message: error.message, details: [['close code', error.closeCode === undefined ? undefined : String(error.closeCode)]] }
  }
  return { title: error?.name ?? 'Error', message: String(error?.message ?? error), details: [] }
}

function showError (error) {
  const { title, message, details } = describeError(error)
  const box = $('#error')
  box.querySelector('.error-title').textContent = title
  box.querySelector('.error-message').textContent = message
  box.querySelector('.error-details').replaceChildren(...details.filter(([, value]) => value !== undefined).flatMap(([name, value]) => [
    Object.assign(document.createElement('dt'), { textContent: name }),
    Object.assign(document.createElement('dd'), { textContent: value })
  ]))
  box.hidden = false
}

async function send (text) {
  // A task waiting for input takes the next message as its answer.
  const continuing = task.state === 'TASK_STATE_INPUT_REQUIRED' ? task.id : undefined
  if (continuing === undefined) resetTask()
  else hideError()
  streaming = true
  updateControls()
  try {
    const message = { messageId: messageId(), role: 'ROLE_USER', parts: [{ text }], taskId: continuing }
    for await (const event of client.sendStreamingMessage({ message })) render(event)
  } catch (error) {
    showError(error)
  } finally {
    streaming = false
    updateControls()
  }
}

async function cancel () {
  $('#cancel').disabled = true
  try {
    const canceled = await client.cancelTask({ id: task.id })
    setState(canceled.status.state)
  } catch (error) {
    showError(error)
    updateControls()
  }
}

async function lookUpMissingTask () {
  hideError()
  try {
    await client.getTask({ id: 'no-such-task' })
  } catch (error) {
    showError(error)
  }
}

$('#composer').addEventListener('submit', (event) => {
  event.preventDefault()
  const input = $('#message')
  const text = input.value.trim()
  if (text === '' || streaming) return
  input.value = ''
  void send(text)
})
for (const chip of document.querySelectorAll('.chip')) chip.addEventListener('click', () => void send(chip.dataset.command))
$('#cancel').addEventListener('click', () => void cancel())
$('#missing').addEventListener('click', () => void lookUpMissingTask())

try {
  // A browser has WebSocket, so the factory picks the card's WebSocket interface first.
  const created = await createClient(location.origin)
  await created.transport.connect?.()
  client = created
  const binding = created.agentInterface.protocolBinding === WEBSOCKET_BINDING_URI ? 'WebSocket' : created.agentInterface.protocolBinding
  setConnection(`Connected · ${binding} · ${created.agentInterface.url}`, 'ok')
} catch (error) {
  setConnection('Not connected', 'bad')
  showError(error)
}
updateControls()
